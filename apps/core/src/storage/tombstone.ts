import type { Collection } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../grpc/budget.js";
import type { Loaded, TenantDocument } from "./documents.js";
import { updateVersioned, type Change } from "./versioned-update.js";

/**
 * Deletes by tombstone: `deleted: true` and the deletion event in one versioned update, so
 * the event is recorded exactly once and reads treat the document as gone from that write on
 * (the relay removes the document once its event is out and its idempotency window has closed).
 * Returns the document as it was, or null when it was already gone.
 */
export async function tombstone<D extends TenantDocument>(
  collection: Collection<D>,
  tenant: Tenant,
  id: string,
  event: (current: Loaded<D>) => D["pending_events"][number],
  budget: Budget = UNBOUNDED,
): Promise<Loaded<D> | null> {
  const result = await updateVersioned(collection, tenant, id, (current) => ({ set: { deleted: true }, events: [event(current)] }) as Change<D>, budget);
  return result?.before ?? null;
}
