import { IDEMPOTENCY_RETENTION_MS } from "@rms/proto";
import type { Collection } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { idTimeMs } from "../ids.js";
import type { Loaded, TenantDocument } from "./documents.js";
import { expiryAt } from "./expiry.js";
import { updateVersioned, type Change } from "./versioned-update.js";

/**
 * What a delete sets: `deleted: true`, and `retain_until` the close of the document's Idempotency-Key
 * window (24 h from its creation, its id's time), so a retried create finds its first result until then.
 * The relay makes it `expires_at` once the deletion event is out (storage/expiry.ts), and the TTL index
 * removes the tombstone then: never before its event is copied, never before the window closes.
 */
export function tombstoneFields(id: string): { deleted: true; retain_until: Date } {
  return { deleted: true, retain_until: expiryAt(idTimeMs(id), IDEMPOTENCY_RETENTION_MS) };
}

/**
 * Deletes by tombstone: `tombstoneFields` and the deletion event in one versioned update, so
 * the event is recorded exactly once and reads treat the document as gone from that write on.
 * Returns the document as it was, or null when it was already gone.
 */
export async function tombstone<D extends TenantDocument>(
  collection: Collection<D>,
  tenant: Tenant,
  id: string,
  event: (current: Loaded<D>) => D["pending_events"][number],
  budget: Budget = UNBOUNDED,
): Promise<Loaded<D> | null> {
  const result = await updateVersioned(collection, tenant, id, (current) => ({ set: tombstoneFields(id), events: [event(current)] }) as Change<D>, budget);
  return result?.before ?? null;
}
