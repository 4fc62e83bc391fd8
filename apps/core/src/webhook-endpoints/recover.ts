import { isDuplicateKeyError } from "@rms/proto";
import type { Db, Filter } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../grpc/budget.js";
import { idAt } from "../ids.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { writeWithin } from "../storage/write.js";
import { recoveryDelivery, WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDocument, type FannedOutEvent } from "../webhook-deliveries/model.js";

/** Events looked up per deliveries query (the `$in` list). */
const BATCH = 500;

/**
 * A recovery delivery's id: the event, the endpoint and how many deliveries of that pair there were.
 * Two recoveries racing over the same failed events make the same ids, so each event is scheduled once.
 */
function recoveryDeliveryId(event: string, endpoint: string, round: number): string {
  return `${event}:${endpoint}:recovery:${round}`;
}

/**
 * Schedules one recovery delivery to `endpoint` of every event since `sinceS` (by the event's time, which
 * its id begins with) whose deliveries to it all failed: the event still waits for the endpoint (it is in
 * its `pending_endpoints`, so no attempt, resend included, got a 2xx), at least one delivery of the pair
 * ended `failed`, and none is still pending. Deliveries that succeed are deleted by the workers, so the
 * event's `pending_endpoints` is what tells a success. The workers make each recovery's one attempt.
 * Returns how many were scheduled.
 */
export async function scheduleRecovery(db: Db, tenant: Tenant, endpoint: string, sinceS: number, budget: Budget = UNBOUNDED, nowMs = Date.now()): Promise<number> {
  // The smallest event id of that second: every event since then.
  const firstEvent = idAt("evt", sinceS * 1000, new Uint8Array(32));
  const waiting = await db
    .collection<FannedOutEvent>(EVENTS_COLLECTION)
    // `undelivered` holds whenever an endpoint is pending: it selects the partial index of waiting events.
    .find({ account: tenant.account, livemode: tenant.livemode, _id: { $gte: firstEvent }, pending_endpoints: endpoint, undelivered: true } as Filter<FannedOutEvent>, {
      projection: { _id: 1 },
      ...budget.db(),
    })
    .toArray();
  const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
  let scheduled = 0;
  for (let i = 0; i < waiting.length; i += BATCH) {
    const ids = waiting.slice(i, i + BATCH).map((e) => e._id);
    const byEvent = new Map<string, { pending: boolean; count: number }>();
    const filter = { endpoint, event: { $in: ids } } as Filter<DeliveryDocument>;
    for await (const d of deliveries.find(filter, { projection: { event: 1, status: 1 }, ...budget.db() })) {
      const seen = byEvent.get(d.event) ?? { pending: false, count: 0 };
      byEvent.set(d.event, { pending: seen.pending || d.status === "pending", count: seen.count + 1 });
    }
    for (const [event, { pending, count }] of byEvent) {
      if (pending) continue;
      // The workers' recovery delivery, under an id per round (see recoveryDeliveryId).
      const delivery: DeliveryDocument = {
        ...recoveryDelivery({ _id: event, account: tenant.account, livemode: tenant.livemode }, endpoint, nowMs),
        _id: recoveryDeliveryId(event, endpoint, count),
      };
      try {
        await writeWithin(budget, (options) => deliveries.insertOne(delivery, options));
        scheduled++;
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
      }
    }
  }
  return scheduled;
}
