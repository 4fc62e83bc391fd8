import { RESOURCE_FILTER_LIMITS, RESOURCE_STATUS, ResourceStatus, type ResourceFilter as ResourceFilterMessage } from "@rms/proto";
import { errors } from "../errors.js";
import { isId } from "../ids.js";
import { mergeMetadata, type MetadataPair } from "../metadata.js";
import type { CreatedRange } from "../storage/keyset-list.js";
import type { ResourceStatusName } from "./model.js";

/**
 * The one filter of resources (CONTRACT.md section 3, "The filter model", in ../shared/docs/): the list,
 * search and the bulk jobs all describe their resources with it, check it by the rules below and turn it
 * into a query in one place (filter-query.ts). Every condition given must hold; none given matches all.
 * A bulk job stores it as its `params.filter` (so its public form is this shape).
 */
export interface ResourceFilter {
  /** Well-formed resource ids, without repeats (unknown or foreign ones simply match nothing). */
  ids?: string[];
  /** One status, or any of several (one is kept as a name, several as a list, as the job echoes them). */
  status?: ResourceStatusName | ResourceStatusName[];
  /** Each key holds its value; pairs sharing a key (search's `OR`): any of their values. */
  metadata?: MetadataPair[];
  /** Bounds on `created`, Unix seconds. */
  created?: CreatedRange;
  /** Search only: any of these (an exact name, or a case-insensitive prefix of at least 2 characters). */
  name?: NameMatch[];
}

export interface NameMatch {
  value: string;
  prefix: boolean;
}

/** Where a filter is given: its limits (RESOURCE_FILTER_LIMITS) and the words of its refusals. */
export type FilterPlace = keyof typeof RESOURCE_FILTER_LIMITS;

const BOUNDS = ["gt", "gte", "lt", "lte"] as const;

/** The statuses of a filter as a list (empty: any status). */
export function statusesOf(filter: ResourceFilter): ResourceStatusName[] {
  return filter.status === undefined ? [] : Array.isArray(filter.status) ? filter.status : [filter.status];
}

/**
 * The rules every place applies to the filter's conditions, each naming its param through `at` (the
 * list's `metadata[plan]`, a job's `params[filter][metadata][plan]`); search names the clause instead.
 */
export const filterRules = {
  status(name: string, param: string): ResourceStatusName {
    const status = RESOURCE_STATUS.names.find((s) => s === name);
    if (!status) throw errors.invalid("parameter_invalid", `Invalid ${param}: must be one of ${RESOURCE_STATUS.names.join(", ")}.`, param);
    return status;
  },
  /** A metadata pair to match: the key and value rules of metadata itself (a key that cannot exist would match nothing, silently), and a value. */
  metadata(pair: { key: string; value: string }, param: string): MetadataPair {
    if (pair.value === "")
      throw errors.invalid("parameter_invalid", `Invalid ${param}[${pair.key}]: a value to match must not be empty.`, `${param}[${pair.key}]`);
    mergeMetadata([], [pair], false, param);
    return { k: pair.key, v: pair.value };
  },
  metadataKeys(pairs: readonly MetadataPair[], place: FilterPlace, param: string): void {
    const keys = new Set(pairs.map((p) => p.k)).size;
    const most = RESOURCE_FILTER_LIMITS[place].metadataKeys;
    if (keys > most) {
      const hint = place === "list" ? " (search takes up to 5)" : "";
      throw errors.invalid("parameter_invalid", `Invalid ${param}: at most ${most} metadata key${most === 1 ? "" : "s"} here${hint}, got ${keys}.`, param);
    }
  },
  time(value: bigint | number, param: string): number {
    if (value < 0 || BigInt(value) > BigInt(Number.MAX_SAFE_INTEGER))
      throw errors.invalid("parameter_invalid", `Invalid ${param}: must be a Unix time in seconds.`, param);
    return Number(value);
  },
};

/** `name` as it sits under `prefix`: `metadata[k]` under `params[filter]` is `params[filter][metadata][k]`. */
function paramAt(prefix: string, name: string): string {
  if (prefix === "") return name;
  const at = name.indexOf("[");
  return at === -1 ? `${prefix}[${name}]` : `${prefix}[${name.slice(0, at)}]${name.slice(at)}`;
}

/**
 * The filter of a list request or a job create (the gateway sends both as `rms.v1.ResourceFilter`), checked
 * by the rules of `place`; a refusal names the param under `prefix` (`params[filter]` for a job).
 */
export function filterFromMessage(message: ResourceFilterMessage | undefined, place: Exclude<FilterPlace, "search">, prefix = ""): ResourceFilter {
  const filter: ResourceFilter = {};
  if (!message) return filter;
  const at = (name: string) => paramAt(prefix, name);
  if (message.ids.length > 0) {
    const most = RESOURCE_FILTER_LIMITS[place].ids;
    if (message.ids.length > most)
      throw errors.invalid("parameter_invalid", `Invalid ${at("ids")}: at most ${most} ids, got ${message.ids.length}.`, at("ids"));
    message.ids.forEach((id, i) => {
      if (!isId("res", id))
        throw errors.invalid("parameter_invalid", `Invalid ${at(`ids[${i}]`)}: '${id.slice(0, 64)}' is not a resource id.`, at(`ids[${i}]`));
    });
    filter.ids = [...new Set(message.ids)];
  }
  if (message.status.length > 0) {
    const names = message.status.map((value) =>
      filterRules.status(value === ResourceStatus.UNSPECIFIED ? "" : (RESOURCE_STATUS.nameOf(value) ?? ""), at("status")),
    );
    const distinct = [...new Set(names)];
    filter.status = distinct.length === 1 ? distinct[0]! : distinct;
  }
  if (message.metadata.length > 0) {
    const pairs = message.metadata.map((entry) => filterRules.metadata(entry, at("metadata")));
    filterRules.metadataKeys(pairs, place, at("metadata"));
    filter.metadata = pairs;
  }
  const created: CreatedRange = {};
  for (const bound of BOUNDS) {
    const value = message.created?.[bound];
    if (value !== undefined) created[bound] = filterRules.time(value, at(`created[${bound}]`));
  }
  if (Object.keys(created).length > 0) filter.created = created;
  return filter;
}
