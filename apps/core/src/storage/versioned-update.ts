import type { Collection, Filter, UpdateFilter } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { findLive, liveFilter, type Loaded, type TenantDocument } from "./documents.js";
import { pushEvents, withSequence } from "./outbox.js";
import { writeWithin } from "./write.js";

/**
 * Retries of an optimistic update that lost a race before giving up. The version check
 * is the only serialisation (a filtered update is atomic on one document), so racers on one
 * document from any number of processes each
 * lose at most once per winner.
 */
export const MAX_UPDATE_ATTEMPTS = 64;

/** What a change writes: fields to set and the events it records; null when it changes nothing. */
export interface Change<D extends TenantDocument> {
  set: Partial<Omit<D, "_id" | "account" | "livemode" | "version" | "pending_events">>;
  events: D["pending_events"];
}

/**
 * Read, decide, then write only if the version is still the one read; on a lost race, read
 * again and decide again. The change's events go into the outbox in the same update.
 * Returns null when the document is gone (or never was the tenant's), else the document
 * before and after, as reads load it (the same document, unwritten, when `decide` answered null).
 */
export async function updateVersioned<D extends TenantDocument>(
  collection: Collection<D>,
  tenant: Tenant,
  id: string,
  decide: (current: Loaded<D>) => Change<D> | null,
  budget: Budget = UNBOUNDED,
): Promise<{ before: Loaded<D>; after: Loaded<D> } | null> {
  for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
    const current = await findLive(collection, tenant, id, budget);
    if (!current) return null;
    const change = decide(current);
    if (!change) return { before: current, after: current };
    const filter = { ...liveFilter<D>(tenant, id), version: current.version } as Filter<D>;
    const update = { $set: change.set, $inc: { version: 1 }, ...pushEvents(withSequence(change.events, current.version + 1)) } as unknown as UpdateFilter<D>;
    const result = await writeWithin(budget, (options) => collection.updateOne(filter, update, options));
    if (result.modifiedCount === 1) {
      const after = { ...current, ...change.set, version: current.version + 1 } as Loaded<D>;
      return { before: current, after };
    }
  }
  throw new Error(`update of ${id} kept losing races`);
}
