import type { Collection, Document, Filter } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import type { RetainedUntil } from "./expiry.js";

/**
 * The fields every tenant-owned object kind stores besides its own: the tenant, the version
 * the versioned update matches on, the tombstone, the outbox of events not yet relayed
 * (ARCHITECTURE data rules 2 and 5, in ../shared/docs/), and when it may expire once the outbox is
 * empty (storage/expiry.ts).
 */
export interface TenantDocument<E = unknown> extends RetainedUntil {
  _id: string;
  account: string;
  livemode: boolean;
  /** Optimistic-concurrency version: every update matches on it and increments it. */
  version: number;
  /** Tombstone: reads treat the document as gone; it expires once its event is out and its idempotency window has closed (tombstone.ts). */
  deleted?: true;
  pending_events: E[];
}

/**
 * A document as reads load it: without its outbox. Reads never load `pending_events` (data rule 2 in
 * docs/architecture.md), so a document's size as read does not grow with the events not yet relayed.
 */
export type Loaded<D> = Omit<D, "pending_events">;

/** The read option that leaves the outbox in the database. */
export const WITHOUT_OUTBOX = { projection: { pending_events: 0 } } as const;

/** The filter part that leaves tombstones out. */
export const LIVE = { deleted: { $exists: false } } as const;

/** A filter on `_id` that also names the tenant and leaves tombstones out. */
export function liveFilter<D extends TenantDocument>(tenant: Tenant, id: string): Filter<D> {
  return { _id: id, account: tenant.account, livemode: tenant.livemode, ...LIVE } as Filter<D>;
}

/**
 * One live document of the tenant, or null. Found by `_id` alone (the `_id` index), tenant and
 * tombstone checked here: the same answer as a filter on all three.
 */
export async function findLive<D extends TenantDocument, R extends Pick<D, "account" | "livemode" | "deleted"> = Loaded<D>>(
  collection: Collection<D>,
  tenant: Tenant,
  id: string,
  budget: Budget = UNBOUNDED,
  /** The fields to read (they must include the tenant and the tombstone); default: all but the outbox. */
  projection: Document = WITHOUT_OUTBOX.projection,
): Promise<R | null> {
  const doc = (await collection.findOne({ _id: id } as Filter<D>, { projection, ...budget.db() })) as R | null;
  return doc && doc.account === tenant.account && doc.livemode === tenant.livemode && doc.deleted === undefined ? doc : null;
}
