import type { Collection, Filter } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { idFloorAt, type IdPrefix } from "../ids.js";
import { LIVE, WITHOUT_OUTBOX, type Loaded, type TenantDocument } from "./documents.js";

/** The scalar fields of a document a list may filter on by equality. */
type Equalities<D> = { [K in keyof D & string]?: D[K] extends string | number | boolean ? D[K] : never };

export interface KeysetQuery<D> {
  limit: number;
  /** An id: the page after it (older). */
  startingAfter?: string;
  /** An id: the page before it (newer). At most one of the two. */
  endingBefore?: string;
  /** Equality filters, each backed by its own index (`keysetIndexes`). */
  where?: Equalities<D>;
}

/**
 * One page of the tenant's live documents, newest first (ARCHITECTURE data rule 5, in
 * ../shared/docs/). Ids begin with their creation time, so the cursor is an id: it stays valid
 * after its document is deleted and a page costs the same at any depth (an index range, never
 * a skip).
 */
export async function listPage<D extends TenantDocument>(
  collection: Collection<D>,
  tenant: Tenant,
  query: KeysetQuery<D>,
  budget: Budget = UNBOUNDED,
): Promise<{ items: Loaded<D>[]; hasMore: boolean }> {
  const filter: Record<string, unknown> = { account: tenant.account, livemode: tenant.livemode, ...LIVE };
  for (const [field, value] of Object.entries(query.where ?? {})) if (value !== undefined) filter[field] = value;
  const backwards = query.endingBefore !== undefined;
  if (query.startingAfter !== undefined) filter["_id"] = { $lt: query.startingAfter };
  if (query.endingBefore !== undefined) filter["_id"] = { $gt: query.endingBefore };
  const found = (await collection
    .find(filter as Filter<D>, { sort: { _id: backwards ? 1 : -1 }, limit: query.limit + 1, ...WITHOUT_OUTBOX, ...budget.db() })
    .toArray()) as Loaded<D>[];
  return pageFrom(found, query.limit, backwards);
}

/**
 * A page from the documents a keyset query read (up to `limit + 1`, in its sort order): whether more
 * follow, and the page newest first (a page read backwards, oldest first, is turned around).
 */
export function pageFrom<T>(found: T[], limit: number, backwards: boolean): { items: T[]; hasMore: boolean } {
  const page = found.slice(0, limit);
  return { items: backwards ? page.reverse() : page, hasMore: found.length > limit };
}

/** Bounds on `created` (Unix seconds), as lists and bulk filters take them. */
export interface CreatedRange {
  gt?: number | undefined;
  gte?: number | undefined;
  lt?: number | undefined;
  lte?: number | undefined;
}

/**
 * The `_id` condition of a keyset page: its cursor and a `created` range, the latter as a range of ids.
 * Ids begin with their creation time in ms and `created` is that time in seconds, so `created >= s` is
 * `_id >=` the least id of second `s`: the range is then an index range on every `(account, livemode,
 * [field], _id)` index, not a filter on each document the index yields (CONTRACT.md section 3, "a
 * `created` range is a range of ids"). Callers keep their `created` condition as well (it then removes
 * nothing). Undefined when nothing bounds the ids.
 */
export function keysetIdRange(
  prefix: IdPrefix,
  page: { startingAfter?: string | undefined; endingBefore?: string | undefined },
  created: CreatedRange = {},
): Record<string, string> | undefined {
  const range: Record<string, string> = {};
  const from = Math.max(...[created.gte, created.gt === undefined ? undefined : created.gt + 1].filter((s): s is number => s !== undefined));
  const until = Math.min(...[created.lt, created.lte === undefined ? undefined : created.lte + 1].filter((s): s is number => s !== undefined));
  if (from !== Number.NEGATIVE_INFINITY) range["$gte"] = idFloorAt(prefix, from * 1000);
  if (until !== Number.POSITIVE_INFINITY) range["$lt"] = idFloorAt(prefix, until * 1000);
  if (page.startingAfter !== undefined && (range["$lt"] === undefined || page.startingAfter < range["$lt"])) range["$lt"] = page.startingAfter;
  if (page.endingBefore !== undefined) range["$gt"] = page.endingBefore;
  return Object.keys(range).length > 0 ? range : undefined;
}

/**
 * The indexes of keyset lists: `(account, livemode, _id desc)` for the whole list and
 * `(account, livemode, field, _id desc)` per equality filter.
 */
export async function ensureKeysetIndexes<D extends TenantDocument>(
  collection: Collection<D>,
  filterFields: readonly (keyof D & string)[] = [],
): Promise<void> {
  await collection.createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "tenant_order" });
  for (const field of filterFields) {
    await collection.createIndex({ account: 1, livemode: 1, [field]: 1, _id: -1 }, { name: `tenant_${field}_order` });
  }
}
