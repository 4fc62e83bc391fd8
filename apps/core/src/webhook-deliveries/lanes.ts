import { randomBytes } from "node:crypto";
import type { AnyBulkWriteOperation, Collection, Db, Document, Filter, MongoBulkWriteError } from "mongodb";
import { ensureExpiryIndex, expiryAt, type Expiring } from "../storage/expiry.js";
import { MAX_RETRY_AFTER_SECONDS } from "../webhooks/schedule.js";
import { WEBHOOK_DELIVERIES_COLLECTION, type AttemptDocument, type DeliveryDocument } from "./model.js";

/**
 * The lanes of the deliveries queue (docs/webhooks.md, "Fair delivery"): one document per endpoint with
 * deliveries, which is the unit a claim takes turns over and the place its limits live, so they hold across
 * every worker process:
 * - `turn_at`: when a claim may next serve the lane (ms); null once it has nothing to deliver. Claims take the
 *   lane whose turn came first (round robin: a lane served goes to the back), from the partial index of
 *   lanes with a turn, so a claim reads one lane however many endpoints have work.
 * - `flights`: one entry per delivery in flight, each freed by its release or, if its worker died, once its
 *   `until` (the delivery's lease and a margin) has passed: no counter can leak. A lane with as many live
 *   flights as its limit gets no turn until the first of them can end.
 * - `failures`: consecutive failed attempts (timeouts, refusals, 5xx); from FAILING_AFTER on, the limit is 1.
 * - `hold_until`: a 429/503 `Retry-After` holds the whole endpoint, not only the delivery that got it.
 * - `answering`: the endpoint's last attempt that told anything succeeded. Until then (a new lane, or after a
 *   failure) a flight takes one delivery, not a batch: a batch for an endpoint that never answers is claimed,
 *   waits out one attempt's timeout and goes back to the queue unsent, thousands of writes for nothing.
 * - `version`: moves with every write, so marking a lane idle applies only if nothing happened since it was read.
 * Every change is one single-document write (ARCHITECTURE data rule 1), written as an update pipeline.
 */

export const WEBHOOK_LANES_COLLECTION = "webhook_lanes";
/** Lanes with a turn, by turn: the claim's index (partial: idle lanes are not in it). */
export const TURN_INDEX_NAME = "turn_order";
/** An endpoint's pending deliveries by due time: the claim inside a lane, and the lane's next turn. */
export const ENDPOINT_DUE_INDEX = { endpoint: 1, due_at: 1 } as const;
export const ENDPOINT_DUE_INDEX_NAME = "endpoint_pending_due";
/** Consecutive failed attempts after which an endpoint is tried one delivery at a time, until one succeeds (CONTRACT.md section 7). */
export const FAILING_AFTER = 5;
/** A flight outlives the lease of its delivery by this much, so a dead worker's delivery is claimable again before its flight frees. */
export const FLIGHT_MARGIN_MS = 5_000;
/** A lane untouched this long goes (TTL): it has had nothing to deliver for a month. */
export const LANE_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export interface Flight {
  readonly id: string;
  /** Unix ms: freed then at the latest. */
  readonly until: number;
}

export interface LaneDocument extends Expiring {
  /** The endpoint's id. */
  _id: string;
  account: string;
  livemode: boolean;
  turn_at: number | null;
  flights: Flight[];
  /** The limit the last claim applied (the wake-up of a full lane leaves its turn alone). */
  limit?: number;
  failures: number;
  /** Absent on a lane created before the field: read as not answering until an attempt succeeds. */
  answering?: boolean;
  hold_until: number;
  version: number;
}

/** What an attempt tells its lane: a success ends a failure streak, a timeout, refusal or 5xx extends it; anything else leaves it. */
export type LaneOutcome = "succeeded" | "failing" | "neutral";

const FAILING_ERRORS = new Set(["timeout", "connection_failed", "tls_failed", "dns_failed", "invalid_response"]);

export function laneOutcome(attempt: Pick<AttemptDocument, "status" | "error" | "response_status"> | null): LaneOutcome {
  if (!attempt) return "neutral";
  if (attempt.status === "succeeded") return "succeeded";
  if (attempt.error !== null && FAILING_ERRORS.has(attempt.error)) return "failing";
  return attempt.error === "http_error" && (attempt.response_status ?? 0) >= 500 ? "failing" : "neutral";
}

/** The claim's filter: lanes whose turn has come (`$gte: 0` keeps the query inside the partial index). */
export function turnFilter(nowMs: number): Filter<LaneDocument> {
  return { turn_at: { $gte: 0, $lte: nowMs } } as Filter<LaneDocument>;
}
export const TURN_SORT = { turn_at: 1 } as const;

export async function ensureLaneIndexes(db: Db): Promise<void> {
  const lanes = db.collection<LaneDocument>(WEBHOOK_LANES_COLLECTION);
  await lanes.createIndex({ turn_at: 1 }, { name: TURN_INDEX_NAME, partialFilterExpression: { turn_at: { $gte: 0 } } });
  await ensureExpiryIndex(lanes);
  await db
    .collection(WEBHOOK_DELIVERIES_COLLECTION)
    .createIndex(ENDPOINT_DUE_INDEX, { name: ENDPOINT_DUE_INDEX_NAME, partialFilterExpression: { status: "pending" } });
}

// ---- pipeline pieces

const HOLD = { $ifNull: ["$hold_until", 0] };
const NEXT_VERSION = { $add: [{ $ifNull: ["$version", 0] }, 1] };
/** A turn no earlier than the lane's hold; a candidate that is not a number (null) leaves the lane idle. */
const notBeforeHold = (candidate: unknown) => ({ $cond: [{ $isNumber: candidate }, { $max: [HOLD, candidate] }, null] });
/** The flights still live at `nowMs`, less those of `without`. */
const liveFlights = (nowMs: number, without: readonly string[] = []) => ({
  $filter: {
    input: { $ifNull: ["$flights", []] },
    cond:
      without.length === 0
        ? { $gt: ["$$this.until", nowMs] }
        : { $and: [{ $gt: ["$$this.until", nowMs] }, { $not: [{ $in: ["$$this.id", { $literal: [...without] }] }] }] },
  },
});
/** Its turn now at the latest: a lane that may have work (a flight ended, work was queued). */
const turnByNow = (nowMs: number) => notBeforeHold({ $min: [{ $ifNull: ["$turn_at", nowMs] }, nowMs] });
const expiresAt = (nowMs: number) => ({ $literal: expiryAt(nowMs, LANE_RETENTION_MS) });

/** A new flight's id: unique per claim. */
export function newFlight(nowMs: number, leaseMs: number): Flight {
  return { id: randomBytes(9).toString("base64url"), until: nowMs + leaseMs + FLIGHT_MARGIN_MS };
}

/** The lanes of one database, as the deliveries queue uses them. */
export class Lanes {
  readonly collection: Collection<LaneDocument>;

  constructor(db: Db) {
    this.collection = db.collection<LaneDocument>(WEBHOOK_LANES_COLLECTION);
  }

  /**
   * The lane whose turn came first, with `flight` added if it has room under its limit (`concurrency`, or 1
   * while failing); its next turn is now (the back of the line) while it still has room, else when its first
   * flight can end. Null when no lane's turn has come. The answer says whether the flight was taken.
   */
  async take(flight: Flight, nowMs: number, concurrency: number): Promise<{ lane: LaneDocument; took: boolean } | null> {
    const taken = await this.takeFlights([flight], nowMs, concurrency);
    return taken && { lane: taken.lane, took: taken.took.length > 0 };
  }

  /**
   * As `take`, with as many of `candidates` as the lane has room for, in one write: a worker takes every free
   * place of the lane at once (batches.ts). The answer lists the flights taken.
   */
  async takeFlights(candidates: readonly Flight[], nowMs: number, concurrency: number): Promise<{ lane: LaneDocument; took: Flight[] } | null> {
    const limit = { $cond: [{ $gte: [{ $ifNull: ["$failures", 0] }, FAILING_AFTER] }, 1, concurrency] };
    const free = { $subtract: ["$limit", { $size: "$flights" }] };
    const room = { $lt: [{ $size: "$flights" }, "$limit"] };
    const lane = await this.collection.findOneAndUpdate(
      turnFilter(nowMs),
      [
        { $set: { flights: liveFlights(nowMs), limit } },
        { $set: { flights: { $cond: [{ $gt: [free, 0] }, { $concatArrays: ["$flights", { $slice: [{ $literal: [...candidates] }, free] }] }, "$flights"] } } },
        { $set: { turn_at: notBeforeHold({ $cond: [room, nowMs, { $min: "$flights.until" }] }), version: NEXT_VERSION, expires_at: expiresAt(nowMs) } },
      ],
      { sort: TURN_SORT, returnDocument: "after" },
    );
    if (!lane) return null;
    const held = new Set(lane.flights.map((f) => f.id));
    return { lane, took: candidates.filter((f) => held.has(f.id)) };
  }

  /**
   * Ends a flight after its delivery was released: the failure streak and the hold follow the attempt, if one
   * was made, and the lane's turn comes now (its freed place may take its next delivery) unless held.
   */
  async release(endpoint: string, flightId: string, attempt: AttemptDocument | null, nowMs: number): Promise<void> {
    const { filter, update } = flightEnd({ endpoint, flightIds: [flightId], attempts: attempt ? [attempt] : [] }, nowMs);
    await this.collection.updateOne(filter, update);
  }

  /** Ends several flights, of one lane or many, in one write (a bulk write; each lane's update as `release`'s). */
  async releaseFlights(ends: readonly FlightEnd[], nowMs: number): Promise<void> {
    if (ends.length === 0) return;
    await this.collection.bulkWrite(
      ends.map((end) => ({ updateOne: flightEnd(end, nowMs) })),
      { ordered: false },
    );
  }

  /**
   * A lane whose turn found nothing to claim: its flight ends and its next turn is `nextMs` (null: idle), if
   * nothing wrote the lane since `lane` was read (a producer's wake-up, another flight's end); otherwise the
   * flight ends as any other and the lane keeps its turn, to be looked at again.
   */
  async idle(lane: LaneDocument, flightId: string | readonly string[], nextMs: number | null, nowMs: number): Promise<void> {
    const flightIds = typeof flightId === "string" ? [flightId] : flightId;
    const result = await this.collection.updateOne({ _id: lane._id, version: lane.version }, [
      { $set: { flights: liveFlights(nowMs, flightIds), version: NEXT_VERSION, expires_at: expiresAt(nowMs) } },
      { $set: { turn_at: nextMs === null ? null : notBeforeHold(nextMs) } },
    ]);
    if (result.matchedCount === 0) await this.releaseFlights([{ endpoint: lane._id, flightIds, attempts: [] }], nowMs);
  }
}

/** Flights of one lane that end together, with the attempts they made, in the order made. */
export interface FlightEnd {
  readonly endpoint: string;
  readonly flightIds: readonly string[];
  readonly attempts: readonly AttemptDocument[];
}

/**
 * The update that ends `end`'s flights. The failure streak follows the attempts in order (a success ends it,
 * a timeout, refusal or 5xx extends it), so several attempts of one flight tell the lane what one at a time
 * would have; the hold is the longest `Retry-After` among them.
 */
function flightEnd(end: FlightEnd, nowMs: number): { filter: Filter<LaneDocument>; update: Document[] } {
  const outcomes = end.attempts.map(laneOutcome);
  const lastSuccess = outcomes.lastIndexOf("succeeded");
  const failingAfter = outcomes.slice(lastSuccess + 1).filter((o) => o === "failing").length;
  const streak = lastSuccess >= 0 ? failingAfter : { $add: [{ $ifNull: ["$failures", 0] }, failingAfter] };
  const answering = failingAfter > 0 ? false : lastSuccess >= 0 ? true : { $ifNull: ["$answering", false] };
  const retryAfter = end.attempts.reduce<number | null>(
    (longest, a) => (a.retry_after === null || a.retry_after === undefined ? longest : Math.max(longest ?? 0, a.retry_after)),
    null,
  );
  const hold = retryAfter === null ? HOLD : { $max: [HOLD, nowMs + Math.min(Math.max(retryAfter, 0), MAX_RETRY_AFTER_SECONDS) * 1000] };
  return {
    filter: { _id: end.endpoint },
    update: [
      {
        $set: {
          flights: liveFlights(nowMs, end.flightIds),
          failures: streak,
          answering,
          hold_until: hold,
          version: NEXT_VERSION,
          expires_at: expiresAt(nowMs),
        },
      },
      { $set: { turn_at: turnByNow(nowMs) } },
    ],
  };
}

/** An endpoint that just got deliveries to make. */
export interface LaneWork {
  readonly endpoint: string;
  readonly account: string;
  readonly livemode: boolean;
}

/**
 * Wakes the lanes of endpoints that were just given deliveries (fan-out, recover): each gets its turn now at
 * the latest (created if it had no lane), unless it is held, or full (its turn comes when a flight ends).
 * Producers call it after inserting, so a claim that found the lane empty just before either sees the new
 * deliveries or loses its idle mark to this write (the version moved).
 */
export async function wakeLanes(db: Db, work: readonly LaneWork[], nowMs: number = Date.now()): Promise<void> {
  const byEndpoint = new Map(work.map((w) => [w.endpoint, w]));
  if (byEndpoint.size === 0) return;
  const live = liveFlights(nowMs);
  const full = { $gte: [{ $size: live }, { $ifNull: ["$limit", Number.MAX_SAFE_INTEGER] }] };
  const ops: AnyBulkWriteOperation<LaneDocument>[] = [...byEndpoint.values()].map((w) => ({
    updateOne: {
      filter: { _id: w.endpoint },
      update: [
        {
          $set: {
            account: { $literal: w.account },
            livemode: { $literal: w.livemode },
            flights: { $ifNull: ["$flights", []] },
            failures: { $ifNull: ["$failures", 0] },
            answering: { $ifNull: ["$answering", false] },
            hold_until: HOLD,
            version: NEXT_VERSION,
            expires_at: expiresAt(nowMs),
          },
        },
        { $set: { turn_at: { $cond: [{ $and: [{ $isNumber: "$turn_at" }, full] }, "$turn_at", turnByNow(nowMs)] } } },
      ],
      upsert: true,
    },
  }));
  const lanes = db.collection<LaneDocument>(WEBHOOK_LANES_COLLECTION);
  try {
    await lanes.bulkWrite(ops, { ordered: false });
  } catch (error) {
    // Two producers creating the same lane at once: one insert loses on the unique `_id`; the lane exists
    // now, so the same write again updates it.
    const failed = (error as Partial<MongoBulkWriteError>).writeErrors;
    const list = Array.isArray(failed) ? failed : failed ? [failed] : [];
    if (list.length === 0 || !list.every((e) => e.code === 11000)) throw error;
    await lanes.bulkWrite(
      list.map((e) => ops[e.index]!),
      { ordered: false },
    );
  }
}

/** Lanes looked up per round trip of the repair. */
const REPAIR_BATCH = 500;

/**
 * Gives a turn to every endpoint with pending deliveries whose lane has none (or no lane): what a producer
 * that died between its insert and its wake-up left, and deliveries queued before lanes existed. Skips
 * through `endpoint_pending_due` one endpoint at a time (each step one index seek and one document, however
 * many deliveries the endpoint has), then reads those endpoints' lanes in batches; answers how many it woke.
 */
export async function repairLanes(db: Db, nowMs: number = Date.now()): Promise<number> {
  const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
  const lanes = db.collection<LaneDocument>(WEBHOOK_LANES_COLLECTION);
  let woken = 0;
  let after: string | null = null;
  for (let done = false; !done; ) {
    const batch: LaneWork[] = [];
    while (batch.length < REPAIR_BATCH) {
      const next: DeliveryDocument | null = await deliveries.findOne(
        { ...(after === null ? {} : { endpoint: { $gt: after } }), status: "pending" } as Filter<DeliveryDocument>,
        {
          sort: ENDPOINT_DUE_INDEX,
          hint: ENDPOINT_DUE_INDEX_NAME,
          projection: { endpoint: 1, account: 1, livemode: 1 },
        },
      );
      if (!next) {
        done = true;
        break;
      }
      after = next.endpoint;
      batch.push({ endpoint: next.endpoint, account: next.account, livemode: next.livemode });
    }
    if (batch.length === 0) break;
    const turned = new Set(
      (
        await lanes
          .find({ _id: { $in: batch.map((w) => w.endpoint) }, ...turnFilter(Number.MAX_SAFE_INTEGER) } as Filter<LaneDocument>, { projection: { _id: 1 } })
          .toArray()
      ).map((l) => l._id),
    );
    const work = batch.filter((w) => !turned.has(w.endpoint));
    await wakeLanes(db, work, nowMs);
    woken += work.length;
  }
  return woken;
}
