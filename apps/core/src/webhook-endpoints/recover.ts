import type { Db, Filter, MongoBulkWriteError } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { idAt } from "../ids.js";
import { DEFAULT_WEBHOOK_RECOVER_MAX } from "../settings.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { writeWithin } from "../storage/write.js";
import { wakeLanes } from "../webhook-deliveries/lanes.js";
import { recoveryDelivery, WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDocument, type FannedOutEvent } from "../webhook-deliveries/model.js";

/** Waiting events read per page (and so their deliveries per `$in` query, and recoveries per insert). */
export const RECOVER_PAGE = 500;
/**
 * Waiting events one call examines at most (40 pages): past them the call stops with `hasMore`, whatever it
 * scheduled. Events whose delivery is still pending are walked past, not scheduled; an endpoint with
 * a long backlog of them would otherwise make one call read all of them (up to 30 days of events).
 */
export const RECOVER_EXAMINED_MAX = 20_000;

/** What one recover call did: how many recovery deliveries it scheduled, and whether events were left for another call. */
export interface Recovery {
  readonly scheduled: number;
  readonly hasMore: boolean;
}

export interface RecoverOptions {
  /** Events scheduled at most (CONTRACT.md section 7: 10,000; the settings' `webhookRecoverMax`). */
  readonly max?: number;
  /** Waiting events examined at most (RECOVER_EXAMINED_MAX; tests lower it). */
  readonly examinedMax?: number;
  readonly budget?: Budget;
  readonly nowMs?: number;
}

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
 * event's `pending_endpoints` is what tells a success. At most `max` per call, oldest events first: the
 * waiting events are walked in id order a page at a time (`pending_endpoint_order`), so no call holds more
 * than a page of ids, and `hasMore` says that events were left for the next call; the walk stops after
 * RECOVER_EXAMINED_MAX waiting events (`hasMore` too), however few of them it could schedule. The endpoint's lane is
 * woken after each page: the workers make each recovery's one attempt under the endpoint's own limits, like
 * any other delivery of it.
 */
export async function scheduleRecovery(db: Db, tenant: Tenant, endpoint: string, sinceS: number, options: RecoverOptions = {}): Promise<Recovery> {
  const max = options.max ?? DEFAULT_WEBHOOK_RECOVER_MAX;
  const budget = options.budget ?? UNBOUNDED;
  const nowMs = options.nowMs ?? Date.now();
  const events = db.collection<FannedOutEvent>(EVENTS_COLLECTION);
  const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
  // The smallest event id of that second: every event since then.
  let from: { $gte: string } | { $gt: string } = { $gte: idAt("evt", sinceS * 1000, new Uint8Array(32)) };
  const examinedMax = options.examinedMax ?? RECOVER_EXAMINED_MAX;
  let scheduled = 0;
  let examined = 0;
  for (;;) {
    const page = await events
      // `undelivered` holds whenever an endpoint is pending: it selects the partial index of waiting events.
      .find({ pending_endpoints: endpoint, undelivered: true, _id: from, account: tenant.account, livemode: tenant.livemode } as Filter<FannedOutEvent>, {
        projection: { _id: 1 },
        sort: { _id: 1 },
        limit: Math.min(RECOVER_PAGE, examinedMax - examined),
        ...budget.db(),
      })
      .toArray();
    if (page.length === 0) return { scheduled, hasMore: false };
    const ids = page.map((e) => e._id);
    const byEvent = new Map<string, { pending: boolean; count: number }>();
    for await (const d of deliveries.find({ endpoint, event: { $in: ids } } as Filter<DeliveryDocument>, {
      projection: { event: 1, status: 1 },
      ...budget.db(),
    })) {
      const seen = byEvent.get(d.event) ?? { pending: false, count: 0 };
      byEvent.set(d.event, { pending: seen.pending || d.status === "pending", count: seen.count + 1 });
    }
    // In event order, so the events a capped call leaves are the newest.
    const due = ids.flatMap((event) => {
      const pair = byEvent.get(event);
      return pair && !pair.pending ? [{ event, round: pair.count }] : [];
    });
    const batch = due.slice(0, max - scheduled).map(({ event, round }) => ({
      // The workers' recovery delivery, under an id per round (see recoveryDeliveryId).
      ...recoveryDelivery({ _id: event, account: tenant.account, livemode: tenant.livemode }, endpoint, nowMs),
      _id: recoveryDeliveryId(event, endpoint, round),
    }));
    scheduled += await insertNew(batch, (docs, writeOptions) => deliveries.insertMany(docs, { ordered: false, ...writeOptions }), budget);
    if (batch.length > 0) await wakeLanes(db, [{ endpoint, account: tenant.account, livemode: tenant.livemode }], nowMs);
    if (batch.length < due.length) return { scheduled, hasMore: true };
    examined += page.length;
    if (page.length < RECOVER_PAGE && examined < examinedMax) return { scheduled, hasMore: false };
    // The walk's bound: the rest waits for another call (those still pending may be delivered by then).
    if (examined >= examinedMax) return { scheduled, hasMore: true };
    from = { $gt: ids[ids.length - 1]! };
  }
}

/** Inserts `docs` (unordered); an id already there (a racing recovery of the same round) is not counted. Answers how many were inserted. */
async function insertNew<D>(
  docs: D[],
  insert: (docs: D[], options: { timeoutMS?: number }) => Promise<{ insertedCount: number }>,
  budget: Budget,
): Promise<number> {
  if (docs.length === 0) return 0;
  try {
    return (await writeWithin(budget, (options) => insert(docs, options))).insertedCount;
  } catch (error) {
    const bulk = error as Partial<MongoBulkWriteError>;
    const failed = Array.isArray(bulk.writeErrors) ? bulk.writeErrors : bulk.writeErrors ? [bulk.writeErrors] : [];
    if (failed.length === 0 || !failed.every((e) => e.code === 11000)) throw error;
    return bulk.insertedCount ?? docs.length - failed.length;
  }
}
