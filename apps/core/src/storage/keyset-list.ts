import type { Collection, Filter } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../grpc/budget.js";
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
  const hasMore = found.length > query.limit;
  const page = found.slice(0, query.limit);
  return { items: backwards ? page.reverse() : page, hasMore };
}

/**
 * The indexes of keyset lists: `(account, livemode, _id desc)` for the whole list and
 * `(account, livemode, field, _id desc)` per equality filter.
 */
export async function ensureKeysetIndexes<D extends TenantDocument>(collection: Collection<D>, filterFields: readonly (keyof D & string)[] = []): Promise<void> {
  await collection.createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "tenant_order" });
  for (const field of filterFields) {
    await collection.createIndex({ account: 1, livemode: 1, [field]: 1, _id: -1 }, { name: `tenant_${field}_order` });
  }
}
