import { JOB_TYPES } from "@rms/proto";
import { optionalEnum } from "../../parsing/params.js";
import { ApiError, type ErrorCode } from "../../errors.js";
import { defineOperation, withVariant, type OperationInput, type ParamSpec } from "../../engine/operation.js";
import { JobObject, JobPreviewObject } from "./objects.js";
import { jobParamsOf, PARAMS_SCHEMA } from "./params.js";

/**
 * Most parameters of a create's JSON body: an import of 10,000 items needs far more than the API's usual
 * 1,000 (each item's name, status and metadata keys count). The 1 MiB body limit still bounds it. A form
 * body stops at FORM_BODY_PARAMETER_LIMIT (2,000): decoding a form costs far more per parameter.
 */
export const JOB_BODY_PARAMETER_LIMIT = 250_000;

/** The parameters of `POST /v1/jobs`. */
const JOB_CREATE_PARAMS = {
  type: { example: "resources.import", required: true, schema: { type: "string", enum: [...JOB_TYPES], description: "What the job does." } },
  params: {
    example: { items: [{ name: "Staging cluster", metadata: { plan: "pro" } }] },
    required: true,
    schema: {
      ...PARAMS_SCHEMA,
      description:
        "By type: `filter` and `update`; `filter`; `file` (an uploaded `resources_import` file) or `items` (up to 10,000); an export's optional " +
        "`filter` and `format`.",
    },
  },
  validate_only: {
    example: false,
    schema: {
      type: "boolean",
      default: false,
      description:
        "`true`: check the params exactly as a create would and answer 200 with a `job_preview` (what the job would work on now); " +
        "no job is created, queued or announced by an event.",
    },
  },
} satisfies Record<string, ParamSpec>;

const JOB_CREATE_ERRORS: readonly ErrorCode[] = [
  "parameter_missing",
  "parameter_invalid",
  "parameter_invalid_empty",
  "parameter_unknown",
  "string_too_long",
  "metadata_invalid",
];

/** The request of a create and of its preview alike: one tenant, one typed params (the same checks). */
function jobRequest({ params, tenant }: OperationInput) {
  const type = optionalEnum(params, "type", JOB_TYPES);
  if (type === undefined) throw new ApiError("parameter_missing", "Missing required param: type.", { param: "type" });
  return { tenant, params: jobParamsOf(type, params["params"]) };
}

/** The operation's common description: same path, scope and parameters for a create and its preview. */
const JOB_POST = {
  method: "POST",
  path: "/v1/jobs",
  summary: "Create a job (or preview one with `validate_only`)",
  scope: "jobs:write",
  parameters: JOB_CREATE_PARAMS,
  bodyParameterLimit: JOB_BODY_PARAMETER_LIMIT,
  errors: JOB_CREATE_ERRORS,
  service: "jobs",
  request: jobRequest,
} as const;

/** POST /v1/jobs: 201 with the queued job (params checked first: a bad job is 400 and never queued). */
const create = defineOperation({
  ...JOB_POST,
  success: { status: 201, description: "The queued job.", object: JobObject },
  // limit_exceeded: the account and mode hold JOBS_QUEUED_PER_ACCOUNT unfinished jobs (CONTRACT.md section 6, "Fair sharing").
  errors: [...JOB_CREATE_ERRORS, "limit_exceeded"],
  rpc: "createJob",
  reply: ({ job }) => job,
});

/** POST /v1/jobs with `validate_only=true`: 200 with the job's preview (CONTRACT.md section 6, "Dry run"). */
const preview = defineOperation({
  ...JOB_POST,
  success: {
    status: 200,
    description: "With `validate_only=true`: the preview of the job (nothing is created). Params are checked exactly as for a create (400 alike).",
    object: JobPreviewObject,
  },
  readOnly: true,
  rpc: "previewJob",
  reply: ({ json }) => json,
});

/** POST /v1/jobs: a create, or with `validate_only=true` (a JSON boolean or the form's `"true"`) its preview. */
export const createJob = withVariant(create, preview, "validate_only");
