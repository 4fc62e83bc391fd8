import {
  exampleId,
  idPattern,
  JOB_STATUSES,
  JOB_TYPES,
  RESOURCE_STATUS,
  ResourceStatus,
  type Job,
  type JobFilter,
  type JobItemError,
  type JobParams,
  type MetadataEntry,
} from "@rms/proto";
import { ApiError } from "../../errors.js";
import { constant, field, listOf, publicObject, type JsonSchema } from "../../schema/objects.js";
import { idSchema, LIST_LIMIT_MAX, METADATA_OBJECT } from "../../schema/params.js";
import type { ParamSpec } from "../operation.js";

const JOB_ID = idSchema("job", "A job id: `job_` and an opaque suffix.");

const UNIX_TIME = { type: "integer", minimum: 0, description: "Unix seconds." };
const NULLABLE_TIME = { type: ["integer", "null"], minimum: 0, description: "Unix seconds, or null." };
const STATUS = { type: "string", enum: [...RESOURCE_STATUS.names] };

function fail(): never {
  throw ApiError.internal();
}

/** Metadata pairs as a map with a null prototype: `__proto__` is an own key, serialized verbatim. */
function metadataMap(entries: readonly MetadataEntry[]): Record<string, string> {
  const map = Object.create(null) as Record<string, string>;
  for (const { key, value } of entries) map[key] = value;
  return map;
}

const statusName = (status: ResourceStatus) => RESOURCE_STATUS.nameOf(status) ?? fail();

function filterOf(filter: JobFilter | undefined): Record<string, unknown> {
  if (!filter) fail();
  const out: Record<string, unknown> = {};
  if (filter.ids.length > 0) out["ids"] = [...filter.ids];
  if (filter.status !== ResourceStatus.UNSPECIFIED) out["status"] = statusName(filter.status);
  if (filter.metadata.length > 0) out["metadata"] = metadataMap(filter.metadata);
  if (filter.createdGte !== undefined || filter.createdLte !== undefined) {
    out["created"] = {
      ...(filter.createdGte !== undefined ? { gte: Number(filter.createdGte) } : {}),
      ...(filter.createdLte !== undefined ? { lte: Number(filter.createdLte) } : {}),
    };
  }
  return out;
}

/** A job's params as the API shows them: the request's fields in one canonical form (integers as numbers, metadata as maps). */
export function publicParams(params: JobParams | undefined): Record<string, unknown> {
  const kind = params?.kind;
  switch (kind?.case) {
    case "bulkUpdate": {
      const update = kind.value.update ?? fail();
      return {
        filter: filterOf(kind.value.filter),
        update: {
          ...(update.status !== ResourceStatus.UNSPECIFIED ? { status: statusName(update.status) } : {}),
          ...(update.clearMetadata ? { metadata: "" } : update.metadata.length > 0 ? { metadata: metadataMap(update.metadata) } : {}),
        },
      };
    }
    case "bulkDelete":
      return { filter: filterOf(kind.value.filter) };
    case "importItems":
      return {
        items: kind.value.items.map((item) => ({
          ...(item.name !== undefined ? { name: item.name } : {}),
          ...(item.status !== undefined ? { status: item.status } : {}),
          ...(item.metadata.length > 0 ? { metadata: metadataMap(item.metadata) } : {}),
        })),
      };
    default:
      return fail();
  }
}

/** One failed item, in `result.errors` and in `GET /v1/jobs/{id}/errors`. */
export const JobItemErrorObject = publicObject<JobItemError>("JobItemError", {
  index: field({ type: "integer", minimum: 0, description: "The item's index: in `params.items` for an import, in the filter's matches (id order) for a bulk job." }, (e) =>
    Number(e.index),
  ),
  id: field({ type: ["string", "null"], description: "The resource the item was about, when known." }, (e) => e.id ?? null),
  code: field({ type: "string", description: "An error code, as in error responses (`parameter_invalid_empty`, `string_too_long`, ...)." }, (e) => e.code),
  param: field({ type: ["string", "null"], description: "The item's field at fault, when one is." }, (e) => e.param ?? null),
  message: field({ type: "string" }, (e) => e.message),
});

const FILTER_SCHEMA: JsonSchema = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description: "Which resources: every condition given must hold. Evaluated once, when the job starts.",
  properties: {
    ids: { type: "array", minItems: 1, maxItems: 1000, items: idSchema("res") },
    status: STATUS,
    metadata: { ...METADATA_OBJECT, description: "Equality on each key." },
    created: { type: "object", additionalProperties: false, properties: { gte: UNIX_TIME, lte: UNIX_TIME } },
  },
};
const UPDATE_SCHEMA: JsonSchema = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description: 'The change, with the rules of the resource update: metadata keys merge, a key set to `""` is removed, `metadata: ""` removes all.',
  properties: { status: STATUS, metadata: { oneOf: [METADATA_OBJECT, { type: "string", const: "" }] } },
};
const ITEM_SCHEMA: JsonSchema = {
  type: "object",
  additionalProperties: false,
  description: "A resource to create; an item breaking the resource rules fails alone (counted in `progress.failed`).",
  properties: { name: { type: "string" }, status: { type: "string" }, metadata: METADATA_OBJECT },
};
const PARAMS_SCHEMA: JsonSchema = {
  oneOf: [
    {
      type: "object",
      additionalProperties: false,
      required: ["filter", "update"],
      properties: { filter: FILTER_SCHEMA, update: UPDATE_SCHEMA },
      description: "`resources.bulk_update`",
    },
    { type: "object", additionalProperties: false, required: ["filter"], properties: { filter: FILTER_SCHEMA }, description: "`resources.bulk_delete`" },
    {
      type: "object",
      additionalProperties: false,
      required: ["items"],
      properties: { items: { type: "array", minItems: 1, maxItems: 10000, items: ITEM_SCHEMA } },
      description: "`resources.import`",
    },
  ],
};

/** The public job object of CONTRACT.md section 6: every field always present, in contract order. */
export const JobObject = publicObject<Job>(
  "Job",
  {
    id: field(JOB_ID, (j) => j.id),
    object: constant("job"),
    type: field({ type: "string", enum: [...JOB_TYPES] }, (j) => j.type),
    status: field({ type: "string", enum: [...JOB_STATUSES] }, (j) => j.status),
    params: field(PARAMS_SCHEMA, (j) => publicParams(j.params)),
    progress: field(
      {
        type: "object",
        additionalProperties: false,
        required: ["total", "processed", "failed", "skipped"],
        properties: {
          total: { type: ["integer", "null"], description: "Items of the job: an import's from the start, a bulk job's once its filter is evaluated (null until then)." },
          processed: { type: "integer" },
          failed: { type: "integer" },
          skipped: { type: "integer", description: "Items deleted before the job reached them." },
        },
      },
      (j) => {
        const progress = j.progress ?? fail();
        return {
          total: progress.total === undefined ? null : Number(progress.total),
          processed: Number(progress.processed),
          failed: Number(progress.failed),
          skipped: Number(progress.skipped),
        };
      },
    ),
    result: field(
      {
        type: ["object", "null"],
        description: "Once finished: `created`, `updated` or `deleted` (by type) and the first 100 errors (all of them at `GET /v1/jobs/{id}/errors`).",
        properties: {
          created: { type: "integer" },
          updated: { type: "integer" },
          deleted: { type: "integer" },
          errors: { type: "array", maxItems: 100, items: { $ref: "#/components/schemas/JobItemError" } },
        },
      },
      (j) => (j.result ? { [j.result.countName]: Number(j.result.count), errors: j.result.errors.map((e) => JobItemErrorObject.render(e)) } : null),
    ),
    error: field(
      {
        type: ["object", "null"],
        required: ["code", "message"],
        properties: { code: { type: "string" }, message: { type: "string" } },
        description: "Why a failed job failed.",
      },
      (j) => (j.error ? { code: j.error.code, message: j.error.message } : null),
    ),
    attempts: field({ type: "integer", minimum: 0, description: "Transient failures retried so far." }, (j) => Number(j.attempts)),
    cancel_requested_at: field(NULLABLE_TIME, (j) => (j.cancelRequestedAt === undefined ? null : Number(j.cancelRequestedAt))),
    livemode: field({ type: "boolean" }, (j) => j.livemode),
    created: field(UNIX_TIME, (j) => Number(j.created)),
    started_at: field(NULLABLE_TIME, (j) => (j.startedAt === undefined ? null : Number(j.startedAt))),
    finished_at: field(NULLABLE_TIME, (j) => (j.finishedAt === undefined ? null : Number(j.finishedAt))),
  },
  [JobItemErrorObject as never],
);

export const JobListObject = listOf(JobObject, "/v1/jobs", LIST_LIMIT_MAX);

/** The `:id` of `/v1/jobs/:id`. */
export const JOB_ID_PATH = { id: { example: exampleId("job"), schema: { type: "string", description: "The job id." } } } satisfies Record<string, ParamSpec>;

/** The parameters of `POST /v1/jobs`. */
export const JOB_CREATE_PARAMS = {
  type: { example: "resources.import", required: true, schema: { type: "string", enum: [...JOB_TYPES], description: "What the job does." } },
  params: {
    example: { items: [{ name: "Staging cluster", metadata: { plan: "pro" } }] },
    required: true,
    schema: { ...PARAMS_SCHEMA, description: "By type: `filter` and `update`, `filter`, or `items` (up to 10,000)." },
  },
} satisfies Record<string, ParamSpec>;

/** One page of a job's item errors, with the job's id for the envelope's `url`. */
export interface JobErrorPage {
  readonly jobId: string;
  readonly items: readonly JobItemError[];
  readonly hasMore: boolean;
}

/** The list envelope of `GET /v1/jobs/{id}/errors`; its `url` names the job, as Stripe's nested lists do. */
export const JobItemErrorListObject = publicObject<JobErrorPage>(
  "JobItemErrorList",
  {
    object: constant("list"),
    url: field({ type: "string", pattern: `^/v1/jobs/${idPattern("job")}/errors$` }, (page) => `/v1/jobs/${page.jobId}/errors`),
    has_more: field({ type: "boolean" }, (page) => page.hasMore),
    data: field({ type: "array", maxItems: LIST_LIMIT_MAX, items: { $ref: "#/components/schemas/JobItemError" } }, (page) => page.items.map((e) => JobItemErrorObject.render(e))),
  },
  [JobItemErrorObject as never],
);
