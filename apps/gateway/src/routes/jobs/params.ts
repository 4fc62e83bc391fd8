import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ImportItemSchema, JobParamsSchema, JobType, JobUpdateSchema, ResourceFilterSchema } from "@rms/proto";
import { ApiError } from "../../errors.js";
import type { Params } from "../../parsing/body.js";
import type { JsonSchema } from "../../schema/objects.js";
import { metadataParam } from "../../schema/params.js";
import { describe, listValue, optionalEnum, optionalMetadata, optionalString, rejectEmptyValues, rejectUnknown, under } from "../../parsing/params.js";
import { FILTER_PARAMS, filterSchema, resourceFilterOf } from "../resources/filter.js";
import { STATUS_NAMES, statusToProto } from "../resources/objects.js";

/**
 * The shape of a job's `params` (CONTRACT.md section 6): objects where objects belong, lists where
 * lists belong (a JSON array, `ids[]=a&ids[]=b`, or the indexed form `items[0][name]=a`), strings and
 * integers of the right type, no unknown fields. Form values are strings, so an integer is also
 * taken as its decimal text. The result is one typed message, so the JSON and the form version of
 * one request are the same core call (and the same request to the Idempotency-Key). The job-level
 * rules (limits, empty filter or update, id form, metadata keys) are core's; an import item's own
 * rules (name, status, metadata) are checked per item when the job runs. `PARAMS_SCHEMA` describes the
 * same shape in the API document.
 */

function objectAt(value: unknown, param: string): Params {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ApiError("parameter_invalid", `Invalid ${param}: must be an object, got ${describe(value)}.`, { param });
  }
  return value as Params;
}

/** A list (parsing/params.ts `listValue`), or a single value as a list of one. */
function listAt(value: unknown, param: string): unknown[] {
  const items = listValue(value, param);
  if (items) return items;
  if (typeof value === "string") return [value];
  throw new ApiError("parameter_invalid", `Invalid ${param}: must be a list, got ${describe(value)}.`, { param });
}

/** A bulk job's `params[filter]`: the resource filter as the list reads it (routes/resources/filter.ts), its refusals named under `params[filter]`. */
function filterOf(raw: unknown): MessageInitShape<typeof ResourceFilterSchema> {
  const prefix = "params[filter]";
  if (raw === undefined) throw new ApiError("parameter_missing", `Missing required param: ${prefix}.`, { param: prefix });
  const filter = objectAt(raw, prefix);
  return under(prefix, () => {
    rejectUnknown(filter, FILTER_PARAMS);
    // The lists' rule: a filter given empty (`params[filter][status]=`) cannot be unset.
    rejectEmptyValues(filter);
    return resourceFilterOf(filter);
  });
}

function updateOf(raw: unknown): MessageInitShape<typeof JobUpdateSchema> {
  const prefix = "params[update]";
  if (raw === undefined) throw new ApiError("parameter_missing", `Missing required param: ${prefix}.`, { param: prefix });
  const update = objectAt(raw, prefix);
  return under(prefix, () => {
    rejectUnknown(update, ["status", "metadata"]);
    const status = optionalEnum(update, "status", STATUS_NAMES);
    const metadata = optionalMetadata(update);
    return { status: statusToProto(status), metadata: metadata?.entries ?? [], clearMetadata: metadata?.clear ?? false };
  });
}

function itemOf(raw: unknown, index: number): MessageInitShape<typeof ImportItemSchema> {
  const prefix = `params[items][${index}]`;
  const item = objectAt(raw, prefix);
  return under(prefix, () => {
    rejectUnknown(item, ["name", "status", "metadata"]);
    // Types only: an empty or long name, an unknown status or bad metadata keys fail this item when the job runs.
    const name = optionalString(item, "name");
    const status = optionalString(item, "status");
    const metadata = optionalMetadata(item);
    return { ...(name !== undefined ? { name } : {}), ...(status !== undefined ? { status } : {}), metadata: metadata?.entries ?? [] };
  });
}

/** The typed params of a create, from `type` and `params` as decoded from JSON or a form. */
export function jobParamsOf(type: JobType, raw: unknown): MessageInitShape<typeof JobParamsSchema> {
  if (raw === undefined) throw new ApiError("parameter_missing", "Missing required param: params.", { param: "params" });
  const params = objectAt(raw, "params");
  const allowed = ALLOWED[type];
  under("params", () => rejectUnknown(params, allowed));
  switch (type) {
    case "resources.bulk_update":
      return { kind: { case: "bulkUpdate", value: { resourceFilter: filterOf(params["filter"]), update: updateOf(params["update"]) } } };
    case "resources.bulk_delete":
      return { kind: { case: "bulkDelete", value: { resourceFilter: filterOf(params["filter"]) } } };
    case "resources.import": {
      const file = under("params", () => optionalString(params, "file"));
      if (file !== undefined) {
        if (params["items"] !== undefined)
          throw new ApiError("parameter_invalid", "Give either params[file] (an uploaded file) or params[items], not both.", { param: "params[file]" });
        return { kind: { case: "importItems", value: { file, items: [] } } };
      }
      if (params["items"] === undefined)
        throw new ApiError("parameter_missing", "Missing required param: params[file] (or params[items]).", { param: "params[file]" });
      const items = listAt(params["items"], "params[items]");
      return { kind: { case: "importItems", value: { items: items.map(itemOf) } } };
    }
    case "resources.export": {
      const format = under("params", () => optionalEnum(params, "format", EXPORT_FORMATS));
      const filter = params["filter"] === undefined ? undefined : filterOf(params["filter"]);
      return { kind: { case: "exportResources", value: { ...(filter ? { resourceFilter: filter } : {}), format: format ?? "" } } };
    }
  }
}

/** The fields of `params` by type. */
const ALLOWED: Record<JobType, string[]> = {
  "resources.bulk_update": ["filter", "update"],
  "resources.bulk_delete": ["filter"],
  "resources.import": ["file", "items"],
  "resources.export": ["filter", "format"],
};

/** The formats of an export's file. */
export const EXPORT_FORMATS = ["jsonl", "csv"] as const;

const STATUS = { type: "string", enum: [...STATUS_NAMES] };

const FILTER_SCHEMA = filterSchema(
  "job",
  "Which resources, as the list filters them (up to 1,000 ids, up to 5 metadata keys): every condition given must hold. Evaluated once, when the job starts.",
);
const { minProperties: _atLeastOne, ...EXPORT_FILTER_SCHEMA } = filterSchema(
  "job",
  "Which resources, as the list filters them, every condition optional (none: every resource of the account and mode). Evaluated when the job starts: " +
    "resources made later are not exported.",
);
const FILE_ID: JsonSchema = { type: "string", pattern: "^file_[0-9A-Za-z]+$", description: "A file of purpose `resources_import` (`POST /v1/files`)." };
const [UPDATE_METADATA_OBJECT, UPDATE_METADATA_CLEAR] = metadataParam(true).schema["oneOf"] as [JsonSchema, JsonSchema];
const UPDATE_SCHEMA: JsonSchema = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  description: 'The change, with the rules of the resource update: metadata keys merge, a key set to `""` is removed, `metadata: ""` removes all.',
  // The resource update's metadata (keys' rules included), but an empty object changes nothing: an update of it alone
  // is refused (`parameter_invalid_empty`).
  properties: { status: STATUS, metadata: { oneOf: [{ ...UPDATE_METADATA_OBJECT, minProperties: 1 }, UPDATE_METADATA_CLEAR] } },
};
const ITEM_SCHEMA: JsonSchema = {
  type: "object",
  additionalProperties: false,
  description: "A resource to create; an item breaking the resource rules fails alone (counted in `progress.failed`).",
  // Types only, as the create checks them: the resource rules (name length, status, metadata's limits) are checked
  // per item when the job runs, a bad item failing alone, so the document states no more than the create refuses.
  properties: {
    name: { type: "string" },
    status: { type: "string" },
    metadata: {
      type: "object",
      additionalProperties: { type: ["string", "number", "boolean"] },
      description: "Checked with the item when the job runs (the resource's metadata rules; numbers and booleans are taken as their text).",
    },
  },
};
/** The shape of `params` as the API document describes it (a create's parameter, the job object's field). */
export const PARAMS_SCHEMA: JsonSchema = {
  // anyOf, not oneOf: a filter alone is the shape of a bulk delete's params and of an export's (`type` says which).
  anyOf: [
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
      required: ["file"],
      properties: { file: FILE_ID },
      description: "`resources.import` from an uploaded file (JSONL or CSV; docs/files.md). The job object always shows this form.",
    },
    {
      type: "object",
      additionalProperties: false,
      required: ["items"],
      properties: { items: { type: "array", minItems: 1, maxItems: 10000, items: ITEM_SCHEMA } },
      description: "`resources.import` of inline items (a create only: they are stored as a `resources_import` file, and the job shows `file`).",
    },
    {
      type: "object",
      additionalProperties: false,
      properties: {
        filter: EXPORT_FILTER_SCHEMA,
        format: {
          type: "string",
          enum: [...EXPORT_FORMATS],
          default: "jsonl",
          description: "The file's format: JSONL (resource objects) or CSV (`id`, `name`, `status`, `created`, `metadata` as JSON text).",
        },
      },
      description: "`resources.export`",
    },
  ],
};
