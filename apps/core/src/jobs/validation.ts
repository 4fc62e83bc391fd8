import {
  RESOURCE_STATUS,
  ResourceStatus,
  type JobParams,
  type JobUpdate as JobUpdateMessage,
  type ResourceFilter as ResourceFilterMessage,
  type ResourceStatusName,
} from "@rms/proto";
import { errors } from "../errors.js";
import { mergeMetadata, type MetadataPair } from "../metadata.js";
import { filterFromMessage } from "../resources/filter.js";
import {
  EXPORT_FORMATS,
  type ExportFormat,
  IMPORT_ITEMS_MAX,
  JOB_STATUSES,
  JOB_TYPES,
  type ImportItem,
  type JobFilter,
  type JobStatus,
  type JobType,
  type JobUpdate,
  type RequestedParams,
  type TypedParams,
} from "./model.js";

/**
 * The job-level rules of a create, checked before anything is stored (a bad job is 400 and never
 * queued). The gateway has already checked the params' shape (types, unknown fields); the rules of
 * each import item are the runner's, per item (items.ts). Params are named as the public API spells
 * them (`params[filter][ids][3]`).
 */

function statusOf(value: ResourceStatus, param: string): ResourceStatusName | undefined {
  if (value === ResourceStatus.UNSPECIFIED) return undefined;
  const name = RESOURCE_STATUS.nameOf(value);
  if (!name) throw errors.invalid("parameter_invalid", `Invalid ${param}: must be one of active, paused or archived.`, param);
  return name;
}

function pairsOf(entries: readonly { key: string; value: string }[]): MetadataPair[] {
  return entries.map((e) => ({ k: e.key, v: e.value }));
}

/** A bulk job's filter: the resource filter's rules (resources/filter.ts) with a job's limits, and at least one condition. */
function filterOf(message: ResourceFilterMessage | undefined): JobFilter {
  const param = "params[filter]";
  if (!message) throw errors.invalid("parameter_missing", `Missing required param: ${param}.`, param);
  const filter = filterFromMessage(message, "job", param);
  if (Object.keys(filter).length === 0) {
    throw errors.invalid(
      "parameter_invalid_empty",
      `${param} needs at least one condition (ids, status, metadata or created); to match every resource, use ${param}[created][gte]=0.`,
      param,
    );
  }
  return filter;
}

function updateOf(message: JobUpdateMessage | undefined): JobUpdate {
  const param = "params[update]";
  if (!message) throw errors.invalid("parameter_missing", `Missing required param: ${param}.`, param);
  const update: JobUpdate = {};
  const status = statusOf(message.status, `${param}[status]`);
  if (status) update.status = status;
  if (message.clearMetadata && message.metadata.length > 0) {
    throw errors.invalid("parameter_invalid", `Invalid ${param}[metadata]: either "" (remove every key) or keys to merge, not both.`, `${param}[metadata]`);
  }
  if (message.clearMetadata) update.metadata = "";
  else if (message.metadata.length > 0) {
    // The changes' own rules now (keys, values, at most 50 set); the merged result's 50-key limit is per resource, when applied.
    mergeMetadata([], message.metadata, false, `${param}[metadata]`);
    update.metadata = pairsOf(message.metadata);
  }
  if (Object.keys(update).length === 0) {
    throw errors.invalid("parameter_invalid_empty", `${param} changes nothing: give status and/or metadata.`, param);
  }
  return update;
}

function itemsOf(items: readonly { name?: string; status?: string; metadata: { key: string; value: string }[] }[]): ImportItem[] {
  const param = "params[items]";
  if (items.length === 0) throw errors.invalid("parameter_invalid_empty", `${param} is empty: give at least one item.`, param);
  if (items.length > IMPORT_ITEMS_MAX)
    throw errors.invalid("parameter_invalid", `Invalid ${param}: at most ${IMPORT_ITEMS_MAX} items, got ${items.length}.`, param);
  return items.map((item) => ({
    ...(item.name !== undefined ? { name: item.name } : {}),
    ...(item.status !== undefined ? { status: item.status } : {}),
    ...(item.metadata.length > 0 ? { metadata: pairsOf(item.metadata) } : {}),
  }));
}

/** An import's params: a file id, or inline items (stored as a file by the create), not both. */
function importOf(value: { items: readonly { name?: string; status?: string; metadata: { key: string; value: string }[] }[]; file: string }): RequestedParams {
  if (value.file !== "" && value.items.length > 0) {
    throw errors.invalid("parameter_invalid", "Give either params[file] (an uploaded file) or params[items], not both.", "params[file]");
  }
  if (value.file !== "") {
    if (!/^file_[0-9A-Za-z]{1,64}$/.test(value.file))
      throw errors.invalid("parameter_invalid", "Invalid params[file]: must be a file id (file_...).", "params[file]");
    return { type: "resources.import", params: { file: value.file } };
  }
  return { type: "resources.import", params: { items: itemsOf(value.items) } };
}

/** An export's params: the filter model with every condition optional, and the format (jsonl by default). */
function exportParamsOf(message: ResourceFilterMessage | undefined, format: string): TypedParams {
  const filter = message ? filterFromMessage(message, "job", "params[filter]") : {};
  if (format !== "" && !(EXPORT_FORMATS as readonly string[]).includes(format)) {
    throw errors.invalid("parameter_invalid", `Invalid params[format]: must be one of ${EXPORT_FORMATS.join(", ")}.`, "params[format]");
  }
  return { type: "resources.export", params: { filter, format: (format || "jsonl") as ExportFormat } };
}

/** The type and params of a create request, or a 400 naming the first param at fault. */
export function typedParamsOf(params: JobParams | undefined): RequestedParams {
  const kind = params?.kind;
  switch (kind?.case) {
    case "bulkUpdate":
      return { type: "resources.bulk_update", params: { filter: filterOf(kind.value.resourceFilter), update: updateOf(kind.value.update) } };
    case "bulkDelete":
      return { type: "resources.bulk_delete", params: { filter: filterOf(kind.value.resourceFilter) } };
    case "importItems":
      return importOf(kind.value);
    case "exportResources":
      return exportParamsOf(kind.value.resourceFilter, kind.value.format);
    default:
      throw errors.invalid("parameter_missing", "Missing required param: type.", "type");
  }
}

/** A list's `status` filter: empty is none. */
export function jobStatusFilter(value: string): JobStatus | undefined {
  if (value === "") return undefined;
  if (!(JOB_STATUSES as readonly string[]).includes(value)) {
    throw errors.invalid("parameter_invalid", `Invalid status: must be one of ${JOB_STATUSES.join(", ")}.`, "status");
  }
  return value as JobStatus;
}

/** A list's `type` filter: empty is none. */
export function jobTypeFilter(value: string): JobType | undefined {
  if (value === "") return undefined;
  if (!(JOB_TYPES as readonly string[]).includes(value))
    throw errors.invalid("parameter_invalid", `Invalid type: must be one of ${JOB_TYPES.join(", ")}.`, "type");
  return value as JobType;
}
