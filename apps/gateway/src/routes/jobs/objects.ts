import { exampleId, idPattern, JOB_STATUSES, JOB_TYPES, type Job } from "@rms/proto";
import { constant, field, listOf, publicObject, renderedObject, schemaRef } from "../../schema/objects.js";
import { idSchema, LIST_LIMIT_MAX } from "../../schema/params.js";
import type { ParamSpec } from "../../engine/operation.js";
import { PARAMS_SCHEMA } from "./params.js";

// The job and its item errors are rendered by core, once, as their `job.*` events show them (core's
// jobs/render.ts); here they are described for the API document and answered as core wrote them.

const UNIX_TIME = { type: "integer", minimum: 0, description: "Unix seconds." };
const NULLABLE_TIME = { type: ["integer", "null"], minimum: 0, description: "Unix seconds, or null." };

/** One failed item, in `result.errors` and in `GET /v1/jobs/{id}/errors` (core's JSON text of it). */
export const JobItemErrorObject = renderedObject<string>(
  "JobItemError",
  {
    index: {
      type: "integer",
      minimum: 0,
      description: "The item's place: an import's row (0-based, in file order; an inline item's index in `params.items`), a bulk job's match (id order).",
    },
    line: { type: "integer", minimum: 1, description: "An import's row: its line in the file (1-based; an inline item's index + 1). Absent for bulk jobs." },
    id: { type: ["string", "null"], description: "The resource the item was about, when known." },
    code: { type: "string", description: "An error code, as in error responses (`parameter_invalid_empty`, `string_too_long`, ...)." },
    param: { type: ["string", "null"], description: "The item's field at fault, when one is." },
    message: { type: "string" },
  },
  (json) => json,
);

/** The public job object of CONTRACT.md section 6: every field always present, in contract order. */
export const JobObject = renderedObject<Job>(
  "Job",
  {
    id: idSchema("job", "A job id: `job_` and an opaque suffix."),
    object: { type: "string", const: "job" },
    type: { type: "string", enum: [...JOB_TYPES] },
    status: { type: "string", enum: [...JOB_STATUSES] },
    params: PARAMS_SCHEMA,
    progress: {
      type: "object",
      additionalProperties: false,
      required: ["total", "processed", "failed", "skipped"],
      properties: {
        total: {
          type: ["integer", "null"],
          description: "Items of the job: an import's from the start, a bulk job's once its filter is evaluated (null until then).",
        },
        processed: { type: "integer" },
        failed: { type: "integer" },
        skipped: { type: "integer", description: "Items deleted before the job reached them." },
      },
    },
    result: {
      type: ["object", "null"],
      description:
        "Once finished: `created`, `updated`, `deleted` or `exported` (by type), the first 100 errors (all of them at `GET /v1/jobs/{id}/errors`), " +
        "and the files the job wrote: `results_file` (an import's, bulk update's or bulk delete's: one JSONL line per item) or `file` (an export's).",
      properties: {
        created: { type: "integer" },
        updated: { type: "integer" },
        deleted: { type: "integer" },
        exported: { type: "integer" },
        errors: { type: "array", maxItems: 100, items: schemaRef(JobItemErrorObject.name) },
        results_file: {
          type: ["string", "null"],
          description:
            'A `job_results` file: an import\'s has one line per input row in row order, `{"line":n,"id":"res_..."}` or ' +
            '`{"line":n,"code","param","message"}`; ' +
            'a bulk job\'s one line per item, `{"id","outcome":"updated"|"deleted"|"skipped"}` or `{"id","code","param","message"}`. Null when the job ' +
            "wrote none.",
        },
        file: {
          type: ["string", "null"],
          description: "An export's `resources_export` file (a succeeded export only; a canceled or failed one leaves no file).",
        },
      },
    },
    failure_code: {
      type: ["string", "null"],
      description: "Why a failed job failed, as an error code (`service_unavailable`, `internal_error`, ...); null unless `status` is `failed`.",
    },
    failure_message: { type: ["string", "null"], description: "A human-readable account of `failure_code`; null unless `status` is `failed`." },
    attempts: { type: "integer", minimum: 0, description: "Transient failures retried so far." },
    cancel_requested_at: NULLABLE_TIME,
    livemode: { type: "boolean" },
    created: UNIX_TIME,
    started_at: NULLABLE_TIME,
    finished_at: NULLABLE_TIME,
  },
  (job) => job.json,
  [JobItemErrorObject as never],
);

export const JobListObject = listOf(JobObject, "/v1/jobs", LIST_LIMIT_MAX);

/** The answer of `POST /v1/jobs` with `validate_only=true` (CONTRACT.md section 6, "Dry run"), as core renders it. */
export const JobPreviewObject = renderedObject<string>(
  "JobPreview",
  {
    object: { type: "string", const: "job_preview" },
    type: { type: "string", enum: [...JOB_TYPES] },
    livemode: { type: "boolean" },
    total: {
      type: "integer",
      minimum: 0,
      description:
        "A bulk job or an export: the resources its filter matches now, among the first 100,000 of the range its filter's index walks " +
        "(`total_is_lower_bound` says whether it stopped there). " +
        "An inline import: its item count. A file import: the rows of the file's first 1,000 that were read (the file's row count when it has no more; " +
        "`total_is_lower_bound` when it has).",
    },
    sample: {
      type: "array",
      maxItems: 10,
      items: idSchema("res"),
      description: "A bulk job: the first 10 matches in id order (the order the job takes them). Empty for an import.",
    },
    errors: {
      type: "array",
      maxItems: 100,
      items: schemaRef(JobItemErrorObject.name),
      description:
        "An import: the items (a file import: the rows among its first 1,000) that would fail, the first 100, as `result.errors` would show them (`id` " +
        "null). Empty for a bulk job.",
    },
    total_is_lower_bound: {
      type: "boolean",
      description:
        "A bulk job: true when counting stopped after examining 100,000 resources, so `total` means at least as many (the job itself takes every " +
        "match). Always false for an import.",
    },
  },
  (json) => json,
  [JobItemErrorObject as never],
);

/** The `:id` of `/v1/jobs/:id`. */
export const JOB_ID_PATH = { id: { example: exampleId("job"), schema: { type: "string", description: "The job id." } } } satisfies Record<string, ParamSpec>;

/** One page of a job's item errors (core's JSON text of each), with the job's id for the envelope's `url`. */
export interface JobErrorPage {
  readonly jobId: string;
  readonly items: readonly string[];
  readonly hasMore: boolean;
}

/** The list envelope of `GET /v1/jobs/{id}/errors`; its `url` names the job, as Stripe's nested lists do. */
export const JobItemErrorListObject = publicObject<JobErrorPage>(
  "JobItemErrorList",
  {
    object: constant("list"),
    url: field({ type: "string", pattern: `^/v1/jobs/${idPattern("job")}/errors$` }, (page) => `/v1/jobs/${page.jobId}/errors`),
    has_more: field({ type: "boolean" }, (page) => page.hasMore),
    data: field({ type: "array", maxItems: LIST_LIMIT_MAX, items: schemaRef(JobItemErrorObject.name) }, (page) =>
      page.items.map((e) => JobItemErrorObject.render(e)),
    ),
  },
  [JobItemErrorObject as never],
);
