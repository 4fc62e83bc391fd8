import type { Db, Filter } from "mongodb";
import { isDuplicateKeyError } from "@rms/proto";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../grpc/budget.js";
import { idAt } from "../ids.js";
import { written } from "../storage/write.js";
import { recoveryDelivery, WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDocument } from "../webhooks/model.js";

/**
 * A recovery delivery's id: the event, the endpoint and how many deliveries of that pair there were.
 * Two recoveries racing over the same failed events make the same ids, so each event is scheduled once.
 */
function recoveryDeliveryId(event: string, endpoint: string, round: number): string {
  return `${event}:${endpoint}:recovery:${round}`;
}

/**
 * Schedules one recovery delivery to `endpoint` of every event since `sinceS` (by the event's time, which
 * its id begins with) whose deliveries to it all failed: none succeeded and none is still pending.
 * The delivery workers make its one attempt. Returns how many were scheduled.
 */
export async function scheduleRecovery(db: Db, tenant: Tenant, endpoint: string, sinceS: number, budget: Budget = UNBOUNDED, nowMs = Date.now()): Promise<number> {
  const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
  // The smallest event id of that second: every delivery of every event since then, however late it was made.
  const firstEvent = idAt("evt", sinceS * 1000, new Uint8Array(32));
  const filter = { endpoint, account: tenant.account, livemode: tenant.livemode, event: { $gte: firstEvent } } as Filter<DeliveryDocument>;
  const byEvent = new Map<string, { allFailed: boolean; count: number }>();
  for await (const d of deliveries.find(filter, { projection: { event: 1, status: 1 }, ...budget.db() })) {
    const seen = byEvent.get(d.event) ?? { allFailed: true, count: 0 };
    byEvent.set(d.event, { allFailed: seen.allFailed && d.status === "failed", count: seen.count + 1 });
  }
  let scheduled = 0;
  for (const [event, { allFailed, count }] of byEvent) {
    if (!allFailed) continue;
    // The workers' recovery delivery, under an id per round (see recoveryDeliveryId).
    const delivery: DeliveryDocument = {
      ...recoveryDelivery({ _id: event, account: tenant.account, livemode: tenant.livemode }, endpoint, nowMs),
      _id: recoveryDeliveryId(event, endpoint, count),
    };
    try {
      await written(budget, (options) => deliveries.insertOne(delivery, options));
      scheduled++;
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
  }
  return scheduled;
}
