import { JOB_TYPES } from "@rms/proto";
import { optionalEnum } from "../../http/params.js";
import { ApiError } from "../../errors.js";
import { defineOperation, type ParamSpec } from "../operation.js";
import { JobObject } from "./objects.js";
import { jobParamsOf, PARAMS_SCHEMA } from "./params.js";

/**
 * Most parameters of a create's body: an import of 10,000 items needs far more than the API's usual
 * 1,000 (each item's name, status and metadata keys count). The 1 MiB body limit still bounds it.
 */
export const JOB_BODY_PARAMETER_LIMIT = 250_000;

/** The parameters of `POST /v1/jobs`. */
const JOB_CREATE_PARAMS = {
  type: { example: "resources.import", required: true, schema: { type: "string", enum: [...JOB_TYPES], description: "What the job does." } },
  params: {
    example: { items: [{ name: "Staging cluster", metadata: { plan: "pro" } }] },
    required: true,
    schema: { ...PARAMS_SCHEMA, description: "By type: `filter` and `update`, `filter`, or `items` (up to 10,000)." },
  },
} satisfies Record<string, ParamSpec>;

/** POST /v1/jobs: 201 with the queued job (params checked first: a bad job is 400 and never queued). */
export const createJob = defineOperation({
  method: "POST",
  path: "/v1/jobs",
  summary: "Create a job",
  scope: "jobs:write",
  parameters: JOB_CREATE_PARAMS,
  bodyParameterLimit: JOB_BODY_PARAMETER_LIMIT,
  success: { status: 201, description: "The queued job.", object: JobObject },
  errors: ["parameter_missing", "parameter_invalid", "parameter_invalid_empty", "parameter_unknown", "string_too_long", "metadata_invalid"],
  service: "jobs",
  rpc: "createJob",
  request({ params, tenant }) {
    const type = optionalEnum(params, "type", JOB_TYPES);
    if (type === undefined) throw new ApiError("parameter_missing", "Missing required param: type.", { param: "type" });
    return { tenant, params: jobParamsOf(type, params["params"]) };
  },
  reply: ({ job }) => job,
});
