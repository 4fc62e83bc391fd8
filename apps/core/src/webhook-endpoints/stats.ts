import type { Db, Document } from "mongodb";
import { UNBOUNDED, type Budget } from "../budget.js";
import { idFloorAt } from "../ids.js";
import { WEBHOOK_ATTEMPTS_COLLECTION, WEBHOOK_DELIVERIES_COLLECTION, type AttemptDocument, type DeliveryDocument } from "../webhook-deliveries/model.js";

/**
 * An endpoint's delivery statistics (`GET /v1/webhook_endpoints/{id}/delivery_stats`; docs/webhooks.md, "Delivery
 * statistics"), read from what the attempts and the pending deliveries already hold: no counter is written per
 * attempt. Every read is a range of an index the queue or the attempts list declares, the attempts' answered from the
 * index alone (covered: no document fetched) except the two point reads of the latest success and failure, and each
 * range is bounded, so an endpoint with a flood of attempts costs at most the bounds below, whatever the collection holds.
 *
 * - hourly counts of the last 24 hours: `endpoint_status_order` (endpoint, status, _id), the newest
 *   STATS_ATTEMPTS_MAX attempts of the day at most; an attempt counts in the hour its id's time falls in (when it
 *   was due: the time it was made, unless the endpoint's lane was behind);
 * - the failure streak: the newest success (a point of `endpoint_status_order`), then the failed attempts after it,
 *   counted up to STREAK_MAX;
 * - pending deliveries and the next attempt: `endpoint_pending_due` (endpoint, due_at; partial: pending only),
 *   counted up to STATS_PENDING_MAX (these read their documents: the partial index does not hold `status`), each in
 *   the hour it fell due (the current hour for those due later).
 */

export const HOUR_MS = 3_600_000;
export const STATS_HOURS = 24;
/**
 * Attempts of the last day one read counts at most (the newest): index keys only, so about the cost of the 1,000
 * documents one search request may examine (CONTRACT.md section 3). Past it the answer says from which hour it counted.
 */
export const STATS_ATTEMPTS_MAX = 5_000;
/**
 * Pending deliveries one read counts at most: the queue's index of them is partial (pending only) and holds their due
 * time alone, so each is read from its document to check it is still pending; past this the answer says "1,000+".
 */
export const STATS_PENDING_MAX = 1_000;
/** Failed attempts in a row one read counts at most (index keys only); past it the answer says "1,000+". */
export const STREAK_MAX = 1_000;

export interface DeliveryCounts {
  succeeded: number;
  failed: number;
}

export interface DeliveryBucket extends DeliveryCounts {
  /** Unix seconds: the hour's start. */
  start: number;
  pending: number;
}

export interface DeliveryStats {
  asOf: number;
  lastHour: DeliveryCounts;
  lastDay: DeliveryCounts;
  failureStreak: number;
  failureStreakCapped: boolean;
  failingSince: number | null;
  lastFailure: AttemptDocument | null;
  lastSuccessAt: number | null;
  pending: number;
  pendingCapped: boolean;
  nextAttemptAt: number | null;
  buckets: DeliveryBucket[];
  attemptsCapped: boolean;
  countedFrom: number | null;
}

/** The hours' starts (ms), oldest first: the current hour and the 23 before it. */
export function hourStarts(nowMs: number): number[] {
  const current = Math.floor(nowMs / HOUR_MS) * HOUR_MS;
  return Array.from({ length: STATS_HOURS }, (_, i) => current - (STATS_HOURS - 1 - i) * HOUR_MS);
}

/** The statistics of `endpoint` (already checked to be the caller's: every read below filters on it alone). */
export async function deliveryStats(
  db: Db,
  endpoint: { _id: string; failing_since?: number | null },
  nowMs: number,
  budget: Budget = UNBOUNDED,
): Promise<DeliveryStats> {
  const attempts = db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION);
  const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
  const starts = hourStarts(nowMs);
  const id = endpoint._id;

  const [counted, latestSuccess, latestFailure, pendingBuckets, next] = await Promise.all([
    attemptBuckets(db, id, starts, nowMs, budget),
    attempts.findOne({ endpoint: id, status: "succeeded" }, { sort: { _id: -1 }, projection: { _id: 1, created: 1 }, ...budget.db() }),
    attempts.findOne({ endpoint: id, status: "failed" }, { sort: { _id: -1 }, ...budget.db() }),
    pendingByHour(db, id, starts, budget),
    deliveries.findOne(
      { endpoint: id, status: "pending" },
      { sort: { due_at: 1 }, projection: { _id: 0, due_at: 1 }, hint: "endpoint_pending_due", ...budget.db() },
    ),
  ]);
  // The streak: failed attempts after the newest success (all of them, in 30 days, when none succeeded).
  const streakFilter = { endpoint: id, status: "failed" as const, ...(latestSuccess ? { _id: { $gt: latestSuccess._id } } : {}) };
  const streak = latestFailure ? await attempts.countDocuments(streakFilter, { limit: STREAK_MAX, ...budget.db() }) : 0;

  const buckets = starts.map((start, i) => ({
    start: start / 1000,
    succeeded: counted.hours[i]?.succeeded ?? 0,
    failed: counted.hours[i]?.failed ?? 0,
    pending: pendingBuckets.hours[i] ?? 0,
  }));
  const sum = (rows: readonly DeliveryCounts[]) =>
    rows.reduce((a, b) => ({ succeeded: a.succeeded + b.succeeded, failed: a.failed + b.failed }), { succeeded: 0, failed: 0 });
  const failingSinceMs = endpoint.failing_since ?? null;
  return {
    asOf: Math.floor(nowMs / 1000),
    lastHour: counted.lastHour,
    lastDay: sum(buckets),
    failureStreak: streak,
    failureStreakCapped: streak >= STREAK_MAX,
    failingSince: streak > 0 && failingSinceMs !== null ? Math.floor(failingSinceMs / 1000) : null,
    lastFailure: latestFailure,
    lastSuccessAt: latestSuccess?.created ?? null,
    pending: pendingBuckets.total,
    pendingCapped: pendingBuckets.total >= STATS_PENDING_MAX,
    nextAttemptAt: next ? Math.floor(next.due_at / 1000) : null,
    buckets,
    attemptsCapped: counted.capped,
    countedFrom: counted.capped ? counted.from : null,
  };
}

/**
 * The day's attempts by hour and outcome, and the last 60 minutes': one aggregation over the `endpoint_status_order`
 * range from the day's first hour, newest first, stopped at STATS_ATTEMPTS_MAX, grouped by (hour, outcome, within the
 * last 60 minutes) where an hour is found by comparing the id with each hour's first id (ids begin with their time).
 * It reads `_id` and `status` only, both in the index.
 */
async function attemptBuckets(
  db: Db,
  endpoint: string,
  starts: readonly number[],
  nowMs: number,
  budget: Budget,
): Promise<{ hours: DeliveryCounts[]; lastHour: DeliveryCounts; capped: boolean; from: number }> {
  const firsts = starts.map((ms) => idFloorAt("wa", ms));
  const lastHourFrom = idFloorAt("wa", nowMs - HOUR_MS);
  const hourOf = hourIndex("$_id", firsts);
  const pipeline: Document[] = [
    { $match: { endpoint, status: { $in: ["succeeded", "failed"] }, _id: { $gte: firsts[0] } } },
    { $sort: { _id: -1 } },
    { $limit: STATS_ATTEMPTS_MAX },
    { $group: { _id: { h: hourOf, s: "$status", recent: { $gte: ["$_id", lastHourFrom] } }, n: { $sum: 1 }, first: { $min: "$_id" } } },
  ];
  const rows = await db
    .collection(WEBHOOK_ATTEMPTS_COLLECTION)
    .aggregate<{ _id: { h: number; s: "succeeded" | "failed"; recent: boolean }; n: number; first: string }>(pipeline, {
      hint: "endpoint_status_order",
      ...budget.db(),
    })
    .toArray();
  const hours = starts.map(() => ({ succeeded: 0, failed: 0 }));
  const lastHour = { succeeded: 0, failed: 0 };
  let total = 0;
  let first: string | null = null;
  for (const { _id: key, n, first: oldest } of rows) {
    hours[key.h]![key.s] += n;
    if (key.recent) lastHour[key.s] += n;
    total += n;
    if (first === null || oldest < first) first = oldest;
  }
  const capped = total >= STATS_ATTEMPTS_MAX;
  return { hours, lastHour, capped, from: capped && first !== null ? timeOfAttemptId(first, starts) : starts[0]! / 1000 };
}

/** The index of the last of `firsts` (ascending) that `value` is at or after: -1 before the first. */
function hourIndex(value: string, firsts: readonly (string | number)[]): Document {
  return { $reduce: { input: firsts, initialValue: -1, in: { $cond: [{ $gte: [value, "$$this"] }, { $add: ["$$value", 1] }, "$$value"] } } };
}

/** The start (Unix seconds) of the hour an attempt id falls in: the hour whose first id it is at or after. */
function timeOfAttemptId(id: string, starts: readonly number[]): number {
  let hour = starts[0]!;
  for (const start of starts) if (id >= idFloorAt("wa", start)) hour = start;
  return hour / 1000;
}

/**
 * Pending deliveries by the hour they fell due (those due before the day in its first hour, those due later in the
 * current one), counted up to STATS_PENDING_MAX: one aggregation over `endpoint_pending_due`, reading `due_at` only.
 */
async function pendingByHour(db: Db, endpoint: string, starts: readonly number[], budget: Budget): Promise<{ hours: number[]; total: number }> {
  const pipeline: Document[] = [
    { $match: { endpoint, status: "pending" } },
    { $limit: STATS_PENDING_MAX },
    { $project: { _id: 0, due_at: 1 } },
    {
      $group: {
        // Those due before the day's first hour count in it.
        _id: { $max: [0, hourIndex("$due_at", starts)] },
        n: { $sum: 1 },
      },
    },
  ];
  const rows = await db
    .collection(WEBHOOK_DELIVERIES_COLLECTION)
    .aggregate<{ _id: number; n: number }>(pipeline, { hint: "endpoint_pending_due", ...budget.db() })
    .toArray();
  const hours = starts.map(() => 0);
  let total = 0;
  for (const row of rows) {
    hours[row._id] = row.n;
    total += row.n;
  }
  return { hours, total };
}
