import type { Collection, Db, Filter } from "mongodb";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { CoreSettings } from "../settings.js";
import { ensureExpiryIndex } from "../storage/expiry.js";
import { LeaseQueue } from "../storage/lease.js";
import { EVENT_RETENTION_MS, EVENTS_COLLECTION } from "../storage/relay.js";
import { contextOfStored, inSpan, SpanKind, SpanStatusCode } from "@rms/telemetry";
import { ConnectionPool, type EndpointConnections } from "../webhooks/connections.js";
import { DELIVERY_TIMEOUT_MS } from "../webhooks/deliver.js";
import { nextAttemptAtMs } from "../webhooks/schedule.js";
import { applyAttempt, performAttempt, type DeliveryEnvironment } from "./attempt.js";
import { DeliveryBookkeeping } from "./bookkeeping.js";
import { ensureLaneIndexes, FAILING_AFTER, Lanes, newFlight, repairLanes, type Flight } from "./lanes.js";
import { DeliveryMetrics, type GiveUpReason } from "./metrics.js";
import {
  attemptIdOf,
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  WEBHOOK_ENDPOINTS_COLLECTION,
  webhookExpiresAt,
  type AttemptDocument,
  type DeliveryDocument,
  type DeliveryEndpoint,
  type FannedOutEvent,
} from "./model.js";

/**
 * A claim holds its delivery this long: one attempt is bounded by the 15 s timeout, and the reads and
 * writes around it take milliseconds, so the lease outlasts any live attempt and is never renewed. A
 * worker that dies frees its deliveries after this.
 */
export const DELIVERY_LEASE_MS = 4 * DELIVERY_TIMEOUT_MS;

/**
 * A delivery whose event is not in `events` yet (the relay copies it right after queueing its deliveries)
 * is looked at again after 100 ms while younger than 10 s, then every 5 s (a relay that crashed in between
 * leaves the copy to a sweep).
 */
export const EVENT_NOT_YET_COPIED_SOON_MS = 100;
export const EVENT_NOT_YET_COPIED_SOON_FOR_MS = 10_000;
export const EVENT_NOT_YET_COPIED_DELAY_MS = 5_000;
/**
 * Before it is put back, a young delivery's claim reads the event again a few times, this far apart: the relay
 * copies it a few ms after queueing its deliveries, and a worker whose lane had a turn may claim one in between.
 * Putting it back would add up to a poll interval and a turn to that delivery's latency; a short wait does not.
 */
export const EVENT_COPY_REREADS = 4;
export const EVENT_COPY_REREAD_MS = 10;

/** The queue depth's index: pending deliveries by due time (partial: `status: "pending"` only). */
export const DUE_INDEX = { status: 1, due_at: 1 } as const;
export const DUE_INDEX_NAME = "pending_due";
export const DUE_SORT = { due_at: 1 } as const;

/**
 * The deliveries of one endpoint a claim at `nowMs` may take (before the lease condition, storage/lease.ts),
 * earliest due first (DUE_SORT): the claim inside a lane, from `endpoint_pending_due` (lanes.ts).
 */
export function endpointDueFilter(endpoint: string, nowMs: number): Filter<DeliveryDocument> {
  return { endpoint, status: "pending", due_at: { $lte: nowMs } } as Filter<DeliveryDocument>;
}

/** Lanes one claim looks at, at most, before it answers; past that, the worker looks again at once (lookAgainAt). */
export const LANES_PER_CLAIM = 32;
/** How often a worker gives a turn to endpoints with pending deliveries and no turn (lanes.ts, repairLanes). */
export const LANE_REPAIR_MS = 5 * 60_000;

/** What became of one claimed delivery (for tests and logs). */
export type DeliveryStep = "succeeded" | "retry" | "failed" | "waiting" | "lost";

/**
 * The indexes the queue and the attempt lists use, and the TTL indexes of their retention: a finished
 * delivery and an attempt expire 30 days after their creation (model.ts, webhookExpiresAt).
 */
export async function ensureDeliveryIndexes(db: Db): Promise<void> {
  const deliveries = db.collection(WEBHOOK_DELIVERIES_COLLECTION);
  // The queue depth (metrics.ts) reads pending deliveries only; finished ones (kept 30 days) are left out
  // of the index.
  await deliveries.createIndex(DUE_INDEX, { name: DUE_INDEX_NAME, partialFilterExpression: { status: "pending" } });
  // The claim inside a lane and the lanes themselves (lanes.ts).
  await ensureLaneIndexes(db);
  await deliveries.createIndex({ endpoint: 1, event: 1 }, { name: "endpoint_event" });
  await ensureExpiryIndex(deliveries);
  const attempts = db.collection(WEBHOOK_ATTEMPTS_COLLECTION);
  await attempts.createIndex({ endpoint: 1, _id: -1 }, { name: "endpoint_order" });
  await ensureExpiryIndex(attempts);
  // The attempts list's `event` and `status` filters (docs/database.md, "Every query has an index").
  await attempts.createIndex({ endpoint: 1, event: 1, _id: -1 }, { name: "endpoint_event_order" });
  await attempts.createIndex({ endpoint: 1, status: 1, _id: -1 }, { name: "endpoint_status_order" });
}

/** What the deliveries queue of one worker process works with. */
export interface DeliveryQueueOptions {
  readonly db: Db;
  readonly logger: Logger;
  /** The lease owner of what this process claims: unique per worker process. */
  readonly owner: string;
  readonly settings: Pick<CoreSettings, "secretKeyring" | "webhookAllowPrivate" | "webhookRetrySchedule" | "webhookEndpointConcurrency">;
  /** The process's registry, where the deliveries' counters and histograms go (metrics.ts). */
  readonly metrics: Registry;
  readonly leaseMs?: number;
  /** Tests: a certificate authority to trust, a resolver table, a shorter timeout. */
  readonly transport?: DeliveryEnvironment["transport"];
  readonly now?: () => number;
  readonly random?: () => number;
  /** Tells the process's event relay of a write with an event (an endpoint disabled). */
  readonly written?: (collection: string, id: string) => void;
  /** Told when lanes may have work at a time no counter announces (a lane's next turn, more lanes than one claim looks at). */
  readonly lookAgainAt?: (atMs: number) => void;
  /** The group-commit window of the writes after a POST (bookkeeping.ts, BOOKKEEPING_WINDOW_MS by default). */
  readonly bookkeepingWindowMs?: number;
  /** How long a flight goes on claiming its endpoint's deliveries (FLIGHT_CONTINUE_MS by default; tests). */
  readonly continueMs?: number;
  /** How many of a flight's deliveries may be sent and not yet recorded (FLIGHT_UNRECORDED_MAX by default; tests). */
  readonly unrecordedMax?: number;
}

/** A claimed delivery and the flight it holds in its endpoint's lane (lanes.ts). */
export interface ClaimedDelivery {
  readonly delivery: DeliveryDocument;
  readonly flight: Flight;
}

/** One place of an endpoint's lane and the deliveries claimed for it: sent one after another, at most one in flight. */
export interface ClaimedFlight {
  readonly flight: Flight;
  readonly deliveries: readonly DeliveryDocument[];
  /**
   * Deliveries the place may claim at a time (DELIVERIES_PER_FLIGHT for an endpoint known to answer; 1 otherwise):
   * above 1, the flight claims its endpoint's next due deliveries itself as it sends (FLIGHT_CONTINUE_MS).
   */
  readonly perFlight?: number;
}

/** What became of one claimed delivery and, when it stays queued (a retry, an event not copied yet), when it is due again. */
export interface Processed {
  readonly step: DeliveryStep;
  readonly dueAt?: number;
  /** The attempt made (or found recorded), if any: its endpoint's lane follows it. */
  readonly attempt?: AttemptDocument;
}

/**
 * Deliveries one flight takes at most (the claim takes this many per free place of the lane, in one write).
 * Sent one after another, so a flight is still one POST in flight; the bookkeeping of each goes in groups
 * while the next is sent (bookkeeping.ts).
 */
export const DELIVERIES_PER_FLIGHT = 32;
/**
 * A flight sends its next delivery only while that attempt's time limit and this margin (its bookkeeping)
 * end before the delivery's lease: the rest go back to the queue unleased, never sent under an expired lease.
 */
export const FLIGHT_SEND_MARGIN_MS = 5_000;

/**
 * How many of a flight's deliveries may be sent while their records are not yet durable: the next waits for the
 * record of the one this many before it. What a crash of the worker, or a primary away for seconds, sends a second
 * time is what was sent and not recorded, so this bounds it per flight; at full speed a record is durable a few
 * deliveries after its POST, so the bound is rarely reached (docs/webhooks.md, "What a batch may lose to a SIGKILL").
 */
export const FLIGHT_UNRECORDED_MAX = 8;

/** How old a flight's read of its endpoint may be when it sends its next delivery (ms). */
export const ENDPOINT_REREAD_MS = 1_000;

/**
 * How long a flight of an endpoint that answers goes on claiming that endpoint's next due deliveries itself, as its
 * last ones are sent (ms): its place stays taken and the next deliveries go out while the records of the last ones
 * are written, instead of a flight's end, a new turn of the lane and a new claim after each batch's bookkeeping. Past
 * this, the flight ends and the place goes back to its lane, so the worker's slots keep turning over between lanes.
 */
export const FLIGHT_CONTINUE_MS = 1_000;

/** A delivery started: the attempt it made, if any (the flight stops after one that failed), and its bookkeeping. */
interface Started {
  readonly attempt?: AttemptDocument;
  readonly done: Promise<Processed>;
}

/**
 * The deliveries queue as one worker process takes from it: takes the free places of the endpoint lane
 * whose turn came first (lanes.ts), claims up to DELIVERIES_PER_FLIGHT of that endpoint's due deliveries
 * per place under a lease, in one write (storage/lease.ts, claimMany); each place sends its deliveries one
 * after another (attempt.ts) and then, in the release of each lease, makes it due again per the retry
 * schedule or failed (a success deletes a scheduled delivery); the flight ends last, with what its attempts
 * tell the lane. The writes after a POST are grouped across the process (bookkeeping.ts).
 */
export class DeliveryQueue {
  private readonly queue: LeaseQueue<DeliveryDocument>;
  private readonly lanes: Lanes;
  private readonly leaseMs: number;
  private repairedAt = Number.NEGATIVE_INFINITY;
  private readonly deliveries: Collection<DeliveryDocument>;
  private readonly env: DeliveryEnvironment;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly schedule: readonly number[];
  private readonly metrics: DeliveryMetrics;
  readonly bookkeeping: DeliveryBookkeeping;
  /** Keep-alive connections per endpoint, held by its flights (webhooks/connections.ts). */
  readonly connections = new ConnectionPool();

  constructor(private readonly options: DeliveryQueueOptions) {
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.schedule = options.settings.webhookRetrySchedule;
    this.metrics = new DeliveryMetrics(options.metrics);
    this.deliveries = options.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
    this.leaseMs = options.leaseMs ?? DELIVERY_LEASE_MS;
    this.queue = new LeaseQueue(this.deliveries, { owner: options.owner, leaseMs: this.leaseMs, now: this.now });
    this.lanes = new Lanes(options.db);
    this.bookkeeping = new DeliveryBookkeeping(options.db, options.owner, this.lanes, this.now, options.bookkeepingWindowMs);
    this.env = {
      db: options.db,
      keyring: options.settings.secretKeyring,
      allowPrivate: options.settings.webhookAllowPrivate,
      now: this.now,
      logger: options.logger,
      pullPending: async (event, endpoint) => {
        await this.bookkeeping.pulls.add({ event, endpoint });
      },
      ...(options.transport ? { transport: options.transport } : {}),
      ...(options.written ? { written: options.written } : {}),
    };
  }

  /** The next delivery, fairly, alone in its flight (claimFlights with one place of one delivery). */
  async claim(): Promise<ClaimedDelivery | null> {
    const [claimed] = await this.claimFlights(1, 1);
    return claimed ? { delivery: claimed.deliveries[0]!, flight: claimed.flight } : null;
  }

  /**
   * The next deliveries, fairly: the lane whose turn came first gives up to `places` flights (as many as it
   * has room for; none when full), then its endpoint's earliest due deliveries, up to `perFlight` per flight
   * taken (1 until the endpoint is known to answer, and while it fails), are claimed under this process's lease in one write and dealt
   * to the flights in turn; a flight left without a delivery ends at once. A lane with nothing due gets its
   * next turn from its deliveries (lanes.ts, idle) and the next lane is tried, up to LANES_PER_CLAIM; empty
   * when no lane's turn has come.
   */
  async claimFlights(places: number = this.options.settings.webhookEndpointConcurrency, perFlight: number = DELIVERIES_PER_FLIGHT): Promise<ClaimedFlight[]> {
    await this.repairLanesIfDue();
    const concurrency = this.options.settings.webhookEndpointConcurrency;
    for (let looked = 0; looked < LANES_PER_CLAIM; looked++) {
      const nowMs = this.now();
      const candidates = Array.from({ length: places }, () => newFlight(nowMs, this.leaseMs));
      const taken = await this.lanes.takeFlights(candidates, nowMs, concurrency);
      if (!taken) return [];
      if (taken.took.length === 0) continue;
      const { lane, took } = taken;
      // One delivery per flight until the endpoint is known to answer (lanes.ts, `answering`), and while it fails.
      const each = (lane.failures ?? 0) >= FAILING_AFTER || lane.answering !== true ? 1 : perFlight;
      const claimed = await this.queue.claimMany(endpointDueFilter(lane._id, nowMs), DUE_SORT, took.length * each, took[0]!.id);
      if (claimed.length > 0) {
        const used = took.slice(0, Math.min(took.length, claimed.length));
        const dealt = used.map((flight) => ({ flight, deliveries: [] as DeliveryDocument[], perFlight: each }));
        claimed.forEach((delivery, i) => {
          this.metrics.claimed();
          dealt[i % used.length]!.deliveries.push(delivery);
        });
        const unused = took.slice(used.length).map((f) => f.id);
        if (unused.length > 0) void this.endFlights(lane._id, unused, []);
        return dealt;
      }
      const next = await this.nextTurnOf(lane._id, concurrency);
      await this.lanes.idle(
        lane,
        took.map((f) => f.id),
        next,
        nowMs,
      );
      if (next !== null) this.options.lookAgainAt?.(next);
    }
    this.options.lookAgainAt?.(this.now());
    return [];
  }

  /**
   * When an endpoint's next delivery can be claimed: the earliest of its pending deliveries' due times, or
   * lease ends for those in flight; null when it has none. At most `concurrency` of them are leased, so the
   * first `concurrency + 1` by due time hold the answer.
   */
  private async nextTurnOf(endpoint: string, concurrency: number): Promise<number | null> {
    const head = await this.deliveries
      .find({ endpoint, status: "pending" } as Filter<DeliveryDocument>, {
        sort: DUE_SORT,
        limit: concurrency * DELIVERIES_PER_FLIGHT + 1,
        projection: { due_at: 1, lease_until: 1 },
      })
      .toArray();
    return head.length === 0 ? null : Math.min(...head.map((d) => Math.max(d.due_at, d.lease_until ?? 0)));
  }

  /** Every LANE_REPAIR_MS (and at the first claim): lanes for pending deliveries that have no turn (lanes.ts, repairLanes). */
  async repairLanesIfDue(): Promise<void> {
    const nowMs = this.now();
    if (nowMs - this.repairedAt < LANE_REPAIR_MS) return;
    this.repairedAt = nowMs;
    try {
      const woken = await repairLanes(this.options.db, nowMs);
      if (woken > 0) this.options.logger.info({ lanes: woken }, "webhook lanes without a turn woken");
    } catch (error) {
      // The claim goes on; the next repair is the next round's.
      this.options.logger.warn({ err: error }, "webhook lanes repair failed");
    }
  }

  /** One claimed delivery alone in its flight, as `processFlight`. */
  async process(claimed: ClaimedDelivery): Promise<Processed> {
    const [processed] = await this.processFlight({ flight: claimed.flight, deliveries: [claimed.delivery] });
    return processed!;
  }

  /**
   * A flight's deliveries, one after another: each is sent once its turn comes and its bookkeeping goes on
   * while the next is sent. For an endpoint that answers (or one deleted or disabled, whose deliveries end without a
   * POST), the flight then claims its endpoint's next due deliveries itself (the claim made beside the POST of its
   * last delivery) and goes on with them, for up to FLIGHT_CONTINUE_MS.
   * After an attempt that failed (the endpoint may be down) or once the lease leaves too little time for another
   * attempt, the rest go back to the queue unsent. The flight ends last, after every delivery's release, with what
   * its attempts tell the lane (each counted out of the in-flight gauge whatever the outcome). Its POSTs go over the
   * endpoint's keep-alive connections, given back with the flight's end.
   */
  async processFlight(claimed: ClaimedFlight, stopping: () => boolean = () => false): Promise<Processed[]> {
    const { db } = this.options;
    const { flight } = claimed;
    const endpointId = claimed.deliveries[0]!.endpoint;
    const started: Promise<Processed>[] = [];
    const attempts: AttemptDocument[] = [];
    const connections = this.connections.acquire(endpointId);
    const flightStarted = this.now();
    const perFlight = claimed.perFlight ?? 1;
    let taken = claimed.deliveries.length;
    let stopped: unknown = null;
    let next: Promise<DeliveryDocument[]> | null = null;
    try {
      const endpoints = db.collection<DeliveryEndpoint & { deleted?: boolean }>(WEBHOOK_ENDPOINTS_COLLECTION);
      let endpointReadAt = this.now();
      let batch = claimed.deliveries;
      let [endpoint, events] = await Promise.all([endpoints.findOne({ _id: endpointId }), this.eventsOf(batch)]);
      let stop = false;
      const timeoutMs = this.options.transport?.timeoutMs ?? DELIVERY_TIMEOUT_MS;
      // The size of the next round: the claim's, or a batch when the endpoint is gone or disabled (its deliveries
      // end without a POST, so a batch costs no wait: a deleted endpoint's backlog ends in batches).
      const roundSize = () => (perFlight > 1 || !endpoint || endpoint.deleted === true || endpoint.status !== "enabled" ? DELIVERIES_PER_FLIGHT : 1);
      // Another round of the endpoint's due deliveries for this place: only while everything sent so far succeeded,
      // the worker is not stopping and the flight is young and far from its end in the lane.
      const goOn = () =>
        roundSize() > 1 &&
        !stop &&
        !stopping() &&
        this.now() - flightStarted < (this.options.continueMs ?? FLIGHT_CONTINUE_MS) &&
        this.now() + timeoutMs + FLIGHT_SEND_MARGIN_MS <= flight.until;
      const unrecordedMax = this.options.unrecordedMax ?? FLIGHT_UNRECORDED_MAX;
      for (let round = 1; ; round++) {
        for (const [index, delivery] of batch.entries()) {
          // Every delivery before the one `unrecordedMax` back was waited for already: at most that many are unrecorded.
          const recordedFirst = started[started.length - unrecordedMax];
          if (recordedFirst) await recordedFirst.catch(() => undefined);
          // The first is sent whatever the lease, as a lone delivery is; a later one only while its lease,
          // and the flight's place in the lane, outlast an attempt.
          const late = started.length > 0 && this.now() + timeoutMs + FLIGHT_SEND_MARGIN_MS > Math.min(delivery.lease_until ?? 0, flight.until);
          if (stop || stopping() || late) {
            started.push(this.putBack(delivery));
            continue;
          }
          // A flight of slow answers reads its endpoint again: a rotated-out secret or a disabling applies within a second.
          if (this.now() - endpointReadAt > ENDPOINT_REREAD_MS) {
            endpointReadAt = this.now();
            endpoint = await endpoints.findOne({ _id: endpointId });
          }
          // The next round is claimed while the last delivery of this one is sent.
          if (index === batch.length - 1 && goOn()) next = this.claimMore(endpointId, flight, round, roundSize());
          const one = await this.start(delivery, endpoint, events.get(delivery.event) ?? null, connections).catch(
            (error: unknown) => ({ done: Promise.reject(error) }) as Started,
          );
          one.done.catch(() => undefined);
          started.push(one.done);
          if (one.attempt) {
            attempts.push(one.attempt);
            if (one.attempt.status !== "succeeded") stop = true;
          }
        }
        if (next === null) break;
        const more = await next;
        next = null;
        if (more.length === 0) break;
        taken += more.length;
        batch = more;
        // A failure meanwhile (or a stop): the round just claimed goes back at once, unsent, through the loop above.
        events = stop || stopping() ? new Map() : await this.eventsOf(batch);
      }
    } catch (error) {
      // A read failed: the deliveries not started are left to their leases, but a round being claimed goes back at once.
      stopped = error;
      const unsent = next === null ? [] : await (next as Promise<DeliveryDocument[]>);
      taken += unsent.length;
      for (const delivery of unsent) started.push(this.putBack(delivery));
    }
    const settled = await Promise.allSettled(started);
    for (let i = 0; i < taken; i++) this.metrics.released();
    // Last, after the deliveries' own releases: a lane given its turn while a delivery is still leased would
    // be set idle until that lease ends (nextTurnOf), and a retry due in 50 ms would wait a minute.
    await this.endFlights(endpointId, [flight.id], attempts);
    this.connections.release(endpointId);
    if (stopped !== null) throw stopped;
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<Processed>).value);
  }

  /** The events of `deliveries`, by id (one read). */
  private async eventsOf(deliveries: readonly DeliveryDocument[]): Promise<Map<string, FannedOutEvent>> {
    const ids = [...new Set(deliveries.map((d) => d.event))];
    const read = await this.options.db
      .collection<FannedOutEvent>(EVENTS_COLLECTION)
      .find({ _id: { $in: ids } })
      .toArray();
    return new Map(read.map((e) => [e._id, e]));
  }

  /**
   * The next round of a flight: up to `perFlight` of its endpoint's due deliveries, claimed under this process's
   * lease (the place is the flight's already, so no lane write); none when a claim fails (the flight then ends).
   */
  private async claimMore(endpoint: string, flight: Flight, round: number, perFlight: number): Promise<DeliveryDocument[]> {
    try {
      const claimed = await this.queue.claimMany(endpointDueFilter(endpoint, this.now()), DUE_SORT, perFlight, `${flight.id}.${round}`);
      for (const _ of claimed) this.metrics.claimed();
      return claimed;
    } catch (error) {
      this.options.logger.warn({ err: error, endpoint }, "a flight's next claim failed; the flight ends");
      return [];
    }
  }

  /** Closes the keep-alive connections (the worker's stop). */
  close(): void {
    this.connections.close();
  }

  /** Ends flights of a lane (grouped with others); a failure is logged, the flights then end with their `until`. */
  private async endFlights(endpoint: string, flightIds: readonly string[], attempts: readonly AttemptDocument[]): Promise<void> {
    await this.bookkeeping.flights
      .add({ endpoint, flightIds, attempts })
      .catch((error: unknown) => this.options.logger.warn({ err: error, endpoint }, "webhook lane release failed; its flight ends with its lease"));
  }

  /** A claimed delivery not sent (its flight stopped): back to the queue as it was, due when it was. */
  private async putBack(delivery: DeliveryDocument): Promise<Processed> {
    const held = await this.bookkeeping.deliveries.add({ kind: "release", id: delivery._id, epoch: delivery.epoch, set: {} });
    return { step: held ? "waiting" : "lost", dueAt: delivery.due_at };
  }

  /**
   * Ends it without an attempt when there is nothing to deliver to, else attempts it once (the POST is
   * awaited here); then, in `done`, its attempt's record and effects and its release.
   */
  private async start(
    delivery: DeliveryDocument,
    endpoint: (DeliveryEndpoint & { deleted?: boolean }) | null,
    read: FannedOutEvent | null,
    connections?: EndpointConnections,
  ): Promise<Started> {
    const { db } = this.options;
    const epoch = delivery.epoch;
    const now = (done: Promise<Processed>): Started => ({ done });
    // Every release notes its epoch, so the next claim knows whether the one before it ended cleanly.
    const release = async (set: Partial<DeliveryDocument>, step: DeliveryStep, dueAt?: number): Promise<Processed> => {
      const held = await this.bookkeeping.deliveries.add({ kind: "release", id: delivery._id, epoch, set });
      return { step: held ? step : "lost", dueAt };
    };
    // A finished delivery is kept 30 days from its creation, then its TTL index removes it.
    const expires_at = webhookExpiresAt(delivery.created);
    const giveUp = async (reason: GiveUpReason, fields: Partial<DeliveryDocument> = {}): Promise<Processed> => {
      const released = await release({ ...fields, status: "failed", ended_reason: reason, expires_at }, "failed");
      if (released.step === "failed") this.metrics.gaveUp(reason);
      return released;
    };
    // A scheduled delivery that succeeded leaves the queue at once (the queue holds work and failures, not
    // history): its attempt records the success, and the event stops naming the endpoint. A recovery
    // delivery stays, `succeeded`: recover reads an event's deliveries to an endpoint to see whether they all failed.
    const done = async (fields: Partial<DeliveryDocument>): Promise<Processed> => {
      if (delivery.trigger !== "scheduled") return release({ ...fields, status: "succeeded", expires_at }, "succeeded");
      const deleted = await this.bookkeeping.deliveries.add({ kind: "delete", id: delivery._id, epoch });
      return { step: deleted ? "succeeded" : "lost" };
    };

    const events = db.collection<FannedOutEvent>(EVENTS_COLLECTION);
    if (!endpoint || endpoint.deleted) {
      // A deleted endpoint will never answer: no event waits for it any more.
      return now(this.bookkeeping.pulls.add({ event: delivery.event, endpoint: delivery.endpoint }).then(() => giveUp("endpoint_deleted")));
    }
    // A resend (trigger `manual`) may try a disabled endpoint: a way to test it before enabling it again.
    if (endpoint.status !== "enabled" && delivery.trigger !== "manual") return now(giveUp("endpoint_disabled"));
    const event = read ?? (await this.eventCopiedSoon(events, delivery));
    if (!event) {
      const ageMs = this.now() - delivery.created * 1000;
      if (ageMs > EVENT_RETENTION_MS) return now(giveUp("event_expired"));
      // Queued by a relay that copies the event a moment later (or crashed first, and a sweep will): look
      // again soon while young, then every few seconds.
      const delay = ageMs < EVENT_NOT_YET_COPIED_SOON_FOR_MS ? EVENT_NOT_YET_COPIED_SOON_MS : EVENT_NOT_YET_COPIED_DELAY_MS;
      const dueAt = this.now() + delay;
      return now(release({ due_at: dueAt }, "waiting", dueAt));
    }
    // Answered 2xx already (this delivery's attempt before a crash, or a resend): nothing is owed.
    // A resend is made whatever the endpoint answered before, and whether or not it subscribes to the type.
    if (delivery.trigger !== "manual" && !(event.pending_endpoints ?? []).includes(delivery.endpoint)) return now(done({ ended_reason: "not_pending" }));

    const attemptNumber = delivery.attempts + 1;
    const attemptId = attemptIdOf(delivery, attemptNumber);
    // After a claim that did not end cleanly (a worker died holding it), the attempt may be recorded
    // already: its outcome is applied again instead of sending a second time.
    const cleanBefore = (delivery.released_epoch ?? 0) === epoch - 1;
    const stored = cleanBefore ? null : await db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION).findOne({ _id: attemptId });
    const made = stored ?? (await this.attempt(event, endpoint, delivery, attemptId, connections));
    const finish = async (): Promise<Processed> => {
      const recorded = stored ?? (await this.bookkeeping.attempts.add(made));
      const disabled = await applyAttempt(this.env, recorded, endpoint);
      if (disabled) this.metrics.disabled(disabled);

      const atMs = this.now();
      const withAttempt = (processed: Processed): Processed => ({ ...processed, attempt: recorded });
      if (recorded.status === "succeeded") {
        const ended = await done({ attempts: attemptNumber });
        if (ended.step === "succeeded" && delivery.trigger === "scheduled") this.metrics.delivered(event._id, atMs);
        return withAttempt(ended);
      }
      const failed = { attempts: attemptNumber, first_failed_at: delivery.first_failed_at ?? atMs };
      if (disabled) return withAttempt(await giveUp("endpoint_disabled", failed));
      // Recovery and manual deliveries are one attempt each; scheduled ones follow the schedule.
      const next =
        delivery.trigger === "scheduled"
          ? nextAttemptAtMs({
              schedule: this.schedule,
              attemptsMade: attemptNumber,
              failedAtMs: atMs,
              retryAfterSeconds: recorded.retry_after,
              random: this.random,
            })
          : null;
      if (next === null) return withAttempt(await giveUp("schedule_exhausted", failed));
      return withAttempt(await release({ ...failed, due_at: next }, "retry", next));
    };
    return { attempt: made, done: finish() };
  }

  /** A young delivery's event not copied yet: read again EVENT_COPY_REREADS times, EVENT_COPY_REREAD_MS apart. */
  private async eventCopiedSoon(events: Collection<FannedOutEvent>, delivery: DeliveryDocument): Promise<FannedOutEvent | null> {
    for (let reread = 0; reread < EVENT_COPY_REREADS && this.now() - delivery.created * 1000 < EVENT_NOT_YET_COPIED_SOON_FOR_MS; reread++) {
      await new Promise((resolve) => setTimeout(resolve, EVENT_COPY_REREAD_MS));
      const event = await events.findOne({ _id: delivery.event });
      if (event) return event;
    }
    return null;
  }

  /** Sends one attempt and counts it; the caller records it (grouped, bookkeeping.ts). */
  private async attempt(
    event: FannedOutEvent,
    endpoint: DeliveryEndpoint,
    delivery: DeliveryDocument,
    attemptId: string,
    connections?: EndpointConnections,
  ): Promise<AttemptDocument> {
    // A span continuing the trace of the call that made the event (its `trace`; docs/observability.md, "Tracing").
    const attributes = {
      "rms.delivery.id": delivery._id,
      "rms.event.id": event._id,
      "rms.event.type": event.type,
      "rms.webhook_endpoint.id": endpoint._id,
      "rms.delivery.attempt": delivery.attempts + 1,
    };
    return inSpan("webhook delivery", { kind: SpanKind.CONSUMER, attributes, parent: contextOfStored(event.trace) }, async (span) => {
      const made = await performAttempt(this.env, {
        event,
        endpoint,
        trigger: delivery.trigger,
        delivery: delivery._id,
        attemptId,
        ...(connections ? { connections } : {}),
      });
      span.setAttribute("rms.delivery.outcome", made.status === "succeeded" ? "succeeded" : (made.error ?? "failed"));
      if (made.response_status !== null) span.setAttribute("http.response.status_code", made.response_status);
      if (made.status !== "succeeded") span.setStatus({ code: SpanStatusCode.ERROR, message: made.error ?? "failed" });
      this.metrics.attempted(made);
      return made;
    });
  }
}
