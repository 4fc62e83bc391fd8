import { RESOURCE_STATUS } from "@rms/proto";
import type { Collection, Filter } from "mongodb";
import type { Tenant } from "../caller.js";
import { keysetIdRange } from "../storage/keyset-list.js";
import { statusesOf, type NameMatch, type ResourceFilter } from "./filter.js";
import type { ResourceDocument } from "./model.js";

/**
 * The one place a resource filter (filter.ts) becomes a MongoDB query, for the list, search and the bulk
 * jobs alike (docs/database.md, "Every query has an index"; docs/decisions.md, "Filters and search").
 *
 * One index drives the walk, in `_id` order (ids begin with their creation time, so `created` and every
 * cursor are an `_id` range on any of them), chosen in this order:
 * - `ids`: the ids are points of `_id_` (at most 100 in a list, 1,000 in a job), tenant and "not deleted" checked on each;
 * - exact names (search): `live_name_status_order` on the lowercased name (most often one resource);
 * - `metadata`: `live_metadata_status_order`, one key's value(s) and the statuses (all three when the
 *   filter names none, so one index serves metadata with and without status: a merge of at most three
 *   ranges in `_id` order);
 * - a name prefix (search): `live_name_status_order` on the lowercased name's first 2 to 10 characters
 *   (the index also holds the whole lowercased name when longer, for exact names);
 * - `status`, or none: `live_status_order`, all three statuses when the filter names none (a merge of three ranges
 *   in `_id` order, so no index of all live resources costs every create an entry for this case alone).
 * Every one of them holds live resources only, so a walk never reads a tombstone.
 * What that index does not serve (other metadata keys, a name longer than its stored prefixes, status or
 * metadata next to ids) is checked on each document it yields: `rest`. Every combination a list accepts
 * leaves `rest` empty but for `ids`, which bound the walk themselves.
 */

/** Names are matched on their lowercased first NAME_PREFIX_MAX code points through the index; longer prefixes are then checked on `name_lower`. */
export const NAME_PREFIX_MAX = 10;

const STATUSES = RESOURCE_STATUS.names;

/**
 * The indexes that serve the filter, by name (declared by the store at start). Each holds live resources
 * only (partial on LIVE_RESOURCE): a tombstone waits 24 h for its Idempotency-Key window, and were it in
 * these ranges a page would walk every tombstone between its matches. Nothing reads tombstones
 * through them: the relay finds them by `pending_events._id`, the TTL index removes them, and a read by id
 * goes to `_id_`.
 */
export const FILTER_INDEXES = {
  live_status_order: { account: 1, livemode: 1, status: 1, _id: -1 },
  live_metadata_status_order: { account: 1, livemode: 1, "metadata.k": 1, "metadata.v": 1, status: 1, _id: -1 },
  live_name_status_order: { account: 1, livemode: 1, name_prefixes: 1, status: 1, _id: -1 },
} as const;

export type FilterIndex = keyof typeof FILTER_INDEXES;
/** The index a query names as its hint: one of FILTER_INDEXES, or `_id_` for ids. */
export type QueryIndex = FilterIndex | "_id_";

/**
 * "Not deleted" as the filter indexes' partial filter and as every query through them says it, in the same
 * words (the planner uses a partial index only for a query that implies its filter; `$exists: false` cannot
 * be a partial filter). `deleted` is absent on a live resource and `true` on a tombstone, never null.
 */
export const LIVE_RESOURCE = { deleted: { $eq: null } } as const;

/** Declares FILTER_INDEXES. */
export async function ensureFilterIndexes(collection: Collection<ResourceDocument>): Promise<void> {
  for (const [name, keys] of Object.entries(FILTER_INDEXES)) await collection.createIndex(keys, { name, partialFilterExpression: LIVE_RESOURCE });
}

/**
 * The stored fields a name is searched by: the name lowercased, and its lowercased prefixes of 2 to
 * NAME_PREFIX_MAX code points plus, when longer, the whole lowercased name (so an exact name is one point too).
 */
export function nameFields(name: string): { name_lower: string; name_prefixes: string[] } {
  const lower = name.toLowerCase();
  const chars = [...lower];
  const prefixes: string[] = [];
  for (let n = 2; n <= Math.min(NAME_PREFIX_MAX, chars.length); n++) prefixes.push(chars.slice(0, n).join(""));
  if (chars.length > NAME_PREFIX_MAX) prefixes.push(lower);
  return { name_lower: lower, name_prefixes: prefixes };
}

/** Bounds on `_id` a caller walks within: a list's cursors, a job's start bound and progress, a search's position. */
export interface IdBounds {
  gt?: string | undefined;
  lt?: string | undefined;
  lte?: string | undefined;
}

/** A filter as a query: the index that drives it, what that index serves, and what is checked on what it yields. */
export interface ResourceQuery {
  readonly index: QueryIndex;
  /** The tenant, "not deleted" (the indexes' partial filter), the conditions the index serves and the `_id` range. */
  readonly driver: Record<string, unknown>;
  /** Conditions checked on each document the index yields; empty when it yields exactly the matches. */
  readonly rest: Record<string, unknown>[];
}

const point = (values: readonly string[]) => (values.length === 1 ? values[0] : { $in: [...values] });

/** The first `max` code points of a string. */
const codePoints = (value: string, max: number) => [...value].slice(0, max).join("");

/** A name condition on one document: the stored prefix when it holds the whole prefix, else the lowercased or exact name. */
function nameCondition(match: NameMatch): Record<string, unknown> {
  const lower = match.value.toLowerCase();
  if (!match.prefix) return { name: match.value };
  if ([...lower].length <= NAME_PREFIX_MAX) return { name_prefixes: lower };
  return { name_lower: { $regex: `^${lower.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&")}` } };
}

/** The index points of a name condition (its lowercased first code points), or undefined when there is none or one is shorter than 2. */
function namePoints(matches: readonly NameMatch[]): string[] | undefined {
  if (matches.length === 0) return undefined;
  // A prefix: its first NAME_PREFIX_MAX code points; an exact name: itself (a stored prefix when short, the stored whole name when long).
  const points = matches.map((m) => (m.prefix ? codePoints(m.value.toLowerCase(), NAME_PREFIX_MAX) : m.value.toLowerCase()));
  return points.every((p) => [...p].length >= 2) ? [...new Set(points)] : undefined;
}

/** `{k, v}` pairs grouped by key, in the order of their first appearance. */
function valuesByKey(filter: ResourceFilter): [string, string[]][] {
  const keys = new Map<string, string[]>();
  for (const { k, v } of filter.metadata ?? []) keys.set(k, [...new Set([...(keys.get(k) ?? []), v])]);
  return [...keys];
}

/** The query of `filter` for the tenant, within `bounds`. */
export function resourceQuery(tenant: Tenant, filter: ResourceFilter, bounds: IdBounds = {}): ResourceQuery {
  const driver: Record<string, unknown> = { account: tenant.account, livemode: tenant.livemode, ...LIVE_RESOURCE };
  const rest: Record<string, unknown>[] = [];
  const statuses = [...new Set(statusesOf(filter))];
  const anyStatus = statuses.length === 0 || statuses.length === STATUSES.length;
  const status = point(anyStatus ? STATUSES : statuses);
  const byKey = valuesByKey(filter);
  const names = filter.name ?? [];
  const nameRest = () => {
    if (names.length > 0) rest.push(names.length === 1 ? nameCondition(names[0]!) : { $or: names.map(nameCondition) });
  };
  const metadataRest = (pairs: [string, string[]][]) => {
    for (const [k, values] of pairs) rest.push({ metadata: { $elemMatch: { k, v: point(values) } } });
  };

  let index: QueryIndex;
  const points = namePoints(names);
  const exactNames = points !== undefined && names.every((m) => !m.prefix);
  if (filter.ids) {
    index = "_id_";
    driver["_id"] = { $in: filter.ids };
    if (!anyStatus) rest.push({ status });
    metadataRest(byKey);
    nameRest();
  } else if (points && (exactNames || byKey.length === 0)) {
    index = "live_name_status_order";
    driver["name_prefixes"] = point(points);
    driver["status"] = status;
    metadataRest(byKey);
    // The points are the conditions themselves when every one is a prefix the stored prefixes hold whole.
    if (!names.every((m) => m.prefix && [...m.value].length <= NAME_PREFIX_MAX)) nameRest();
  } else if (byKey.length > 0) {
    index = "live_metadata_status_order";
    const [[k, values], ...others] = byKey as [[string, string[]], ...[string, string[]][]];
    driver["metadata"] = { $elemMatch: { k, v: point(values) } };
    driver["status"] = status;
    metadataRest(others);
    nameRest();
  } else {
    index = "live_status_order";
    driver["status"] = status;
    nameRest();
  }

  const range = keysetIdRange("res", { startingAfter: bounds.lt, endingBefore: bounds.gt }, filter.created);
  if (range || bounds.lte !== undefined) {
    driver["_id"] = { ...(driver["_id"] as object | undefined), ...range, ...(bounds.lte !== undefined ? { $lte: bounds.lte } : {}) };
  }
  const created: Record<string, number> = {};
  for (const [bound, value] of Object.entries(filter.created ?? {})) if (value !== undefined) created[`$${bound}`] = value;
  // Removes nothing the `_id` range kept; said for the reader of the query.
  if (Object.keys(created).length > 0) driver["created"] = created;
  return { index, driver, rest };
}

/** The whole query as one find filter: the driver (live documents only) and the rest. */
export function findFilter(query: ResourceQuery): Filter<ResourceDocument> {
  return { ...query.driver, ...(query.rest.length > 0 ? { $and: query.rest } : {}) } as Filter<ResourceDocument>;
}
