import type { Collection, Db, Filter, UpdateFilter } from "mongodb";
import type { Logger } from "pino";
import { ensureExpiryIndex } from "../storage/expiry.js";
import { LeaseQueue } from "../storage/lease.js";
import { EVENT_RETENTION_MS, EVENTS_COLLECTION } from "../storage/relay.js";
import type { RunningTask, WorkerContext, WorkerTask } from "../worker/task.js";
import { applyAttempt, performAttempt, recordAttempt, type DeliveryEnvironment } from "./attempt.js";
import { DELIVERY_TIMEOUT_MS } from "./deliver.js";
import { DeliveryMetrics, queueDepthGauges, type GiveUpReason } from "./metrics.js";
import {
  attemptIdOf,
  DELIVERY_QUEUE,
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  WEBHOOK_ENDPOINTS_COLLECTION,
  webhookExpiresAt,
  type AttemptDocument,
  type DeliveryDocument,
  type DeliveryEndpoint,
  type FannedOutEvent,
} from "./model.js";
import { pullPendingEndpoint } from "./pending.js";
import { nextAttemptAtMs } from "./schedule.js";

/** Deliveries one worker process attempts at once: receivers are slow in parallel, not the worker. */
export const DELIVERY_CONCURRENCY = 4;
/** How often an idle worker reads the queue's counter (one document by `_id`). */
export const DELIVERY_POLL_MS = 100;
/**
 * How often an idle worker claims even when the counter has not moved: for retries another worker
 * scheduled and deliveries inserted without a signal. Between these, an idle worker reads only the
 * counter: a claim is a `findAndModify` on the primary, a counter read a lookup by `_id`.
 */
export const DELIVERY_FULL_POLL_MS = 2_000;
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

export interface DeliveryTaskOptions {
  readonly concurrency?: number;
  readonly pollMs?: number;
  readonly leaseMs?: number;
  /** Tests: a certificate authority to trust, a resolver table, a shorter timeout. */
  readonly transport?: DeliveryEnvironment["transport"];
  readonly now?: () => number;
  readonly random?: () => number;
}

/** The claim's index: pending deliveries by due time (partial: `status: "pending"` only). */
export const DUE_INDEX = { status: 1, due_at: 1 } as const;
export const DUE_INDEX_NAME = "pending_due";
export const DUE_SORT = { due_at: 1 } as const;

/** The deliveries a claim at `nowMs` may take (before the lease condition, storage/lease.ts). */
export function dueFilter(nowMs: number): Filter<DeliveryDocument> {
  return { status: "pending", due_at: { $lte: nowMs } } as Filter<DeliveryDocument>;
}

/** What became of one claimed delivery (for tests and logs). */
export type DeliveryStep = "succeeded" | "retry" | "failed" | "waiting" | "lost";

/**
 * The indexes the queue and the attempt lists use, and the TTL indexes of their retention: a finished
 * delivery and an attempt expire 30 days after their creation (model.ts, webhookExpiresAt).
 */
export async function ensureDeliveryIndexes(db: Db): Promise<void> {
  const deliveries = db.collection(WEBHOOK_DELIVERIES_COLLECTION);
  // The claim (dueFilter, earliest due first) and the queue depth (metrics.ts) read pending deliveries
  // only; finished ones (kept 30 days) are left out of the index.
  await deliveries.createIndex(DUE_INDEX, { name: DUE_INDEX_NAME, partialFilterExpression: { status: "pending" } });
  await deliveries.createIndex({ endpoint: 1, event: 1 }, { name: "endpoint_event" });
  await ensureExpiryIndex(deliveries);
  const attempts = db.collection(WEBHOOK_ATTEMPTS_COLLECTION);
  await attempts.createIndex({ endpoint: 1, _id: -1 }, { name: "endpoint_order" });
  await ensureExpiryIndex(attempts);
  // The attempts list's `event` and `status` filters (docs/database.md, "Every query has an index").
  await attempts.createIndex({ endpoint: 1, event: 1, _id: -1 }, { name: "endpoint_event_order" });
  await attempts.createIndex({ endpoint: 1, status: 1, _id: -1 }, { name: "endpoint_status_order" });
}

/**
 * The deliveries queue of one worker process: claims due deliveries under a lease (storage/lease.ts),
 * up to `concurrency` at a time, makes one attempt of each (attempt.ts) and then, in the release of its
 * lease, makes it due again per the retry schedule or failed; a success deletes a scheduled delivery.
 */
export class DeliveryWorker {
  private readonly queue: LeaseQueue<DeliveryDocument>;
  private readonly deliveries: Collection<DeliveryDocument>;
  private readonly env: DeliveryEnvironment;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly concurrency: number;
  private readonly schedule: readonly number[];
  private readonly logger: Logger;
  private readonly metrics: DeliveryMetrics;
  private readonly inFlight = new Set<Promise<void>>();
  private filling: Promise<void> | null = null;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  /** The queue counter last seen, when a claim was last tried, and the earliest retry this worker scheduled. */
  private lastSignal: number | null = null;
  private lastClaimAt = Number.NEGATIVE_INFINITY;
  private nextOwnDue = Number.POSITIVE_INFINITY;

  constructor(
    private readonly context: WorkerContext,
    options: DeliveryTaskOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.concurrency = options.concurrency ?? DELIVERY_CONCURRENCY;
    this.schedule = context.settings.webhookRetrySchedule;
    this.logger = context.logger;
    this.metrics = new DeliveryMetrics(context.metrics);
    this.deliveries = context.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
    this.queue = new LeaseQueue(this.deliveries, { owner: context.workerId, leaseMs: options.leaseMs ?? DELIVERY_LEASE_MS, now: this.now });
    this.env = {
      db: context.db,
      keyring: context.settings.secretKeyring,
      allowPrivate: context.settings.webhookAllowPrivate,
      now: this.now,
      logger: context.logger,
      ...(options.transport ? { transport: options.transport } : {}),
    };
  }

  /**
   * Looks for due work now, then every `pollMs`: claims when the queue counter moved (a fan-out queued
   * deliveries), when a retry this worker scheduled is due, or at least every DELIVERY_FULL_POLL_MS.
   */
  start(pollMs: number = DELIVERY_POLL_MS): void {
    const tick = () => {
      this.poll().catch((error: unknown) => this.logger.warn({ err: error }, "delivery claim failed"));
    };
    tick();
    this.timer = setInterval(tick, pollMs);
    this.timer.unref();
  }

  /** Takes no more work and waits for the attempts in hand (each bounded by the delivery timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // A claim in hand when stopping still runs its attempt; then everything in flight is waited for.
    await this.filling;
    await Promise.allSettled([...this.inFlight]);
  }

  private async poll(): Promise<void> {
    if (this.filling !== null || this.inFlight.size >= this.concurrency) return;
    const signal = await DELIVERY_QUEUE.read(this.context.db);
    const now = this.now();
    if (signal === this.lastSignal && now < this.nextOwnDue && now - this.lastClaimAt < DELIVERY_FULL_POLL_MS) return;
    this.lastSignal = signal;
    await this.fill();
  }

  /** Claims due deliveries until the worker is full or none is due. */
  fill(): Promise<void> {
    this.filling ??= this.claimUntilFull().finally(() => {
      this.filling = null;
    });
    return this.filling;
  }

  private async claimUntilFull(): Promise<void> {
    this.lastClaimAt = this.now();
    if (this.nextOwnDue <= this.now()) this.nextOwnDue = Number.POSITIVE_INFINITY;
    while (!this.stopped && this.inFlight.size < this.concurrency) {
      const claimed = await this.queue.claim(dueFilter(this.now()), DUE_SORT);
      if (!claimed) break;
      this.metrics.claimed();
      const work: Promise<void> = this.process(claimed)
        .then(
          () => undefined,
          (error: unknown) => this.logger.warn({ err: error, delivery: claimed._id }, "delivery failed; its lease will expire and it is retried"),
        )
        .finally(() => {
          this.metrics.released();
          this.inFlight.delete(work);
          // A free slot takes the next due delivery at once, not at the next poll.
          if (!this.stopped) void this.fill().catch(() => undefined);
        });
      this.inFlight.add(work);
    }
  }

  /** One claimed delivery: end it without an attempt when there is nothing to deliver to, else attempt it once and release it. */
  async process(delivery: DeliveryDocument): Promise<DeliveryStep> {
    const { db } = this.context;
    const epoch = delivery.epoch;
    // Every release notes its epoch, so the next claim knows whether the one before it ended cleanly.
    const release = async (update: { $set: Partial<DeliveryDocument> }, step: DeliveryStep): Promise<DeliveryStep> =>
      (await this.queue.release(delivery._id, epoch, { $set: { ...update.$set, released_epoch: epoch } } as UpdateFilter<DeliveryDocument>)) ? step : "lost";
    // A finished delivery is kept 30 days from its creation, then its TTL index removes it.
    const expires_at = webhookExpiresAt(delivery.created);
    const giveUp = async (reason: GiveUpReason, fields: Partial<DeliveryDocument> = {}): Promise<DeliveryStep> => {
      const step = await release({ $set: { ...fields, status: "failed", ended_reason: reason, expires_at } }, "failed");
      if (step === "failed") this.metrics.gaveUp(reason);
      return step;
    };
    // A scheduled delivery that succeeded leaves the queue at once (the queue holds work and failures, not
    // history): its attempt records the success, and the event no longer names the endpoint. A recovery
    // delivery stays, `succeeded`: recover reads an event's deliveries to an endpoint to see whether they all failed.
    const done = async (fields: Partial<DeliveryDocument>): Promise<DeliveryStep> => {
      if (delivery.trigger !== "scheduled") return release({ $set: { ...fields, status: "succeeded", expires_at } }, "succeeded");
      const { deletedCount } = await this.deliveries.deleteOne({ _id: delivery._id, epoch, lease_owner: this.context.workerId } as Filter<DeliveryDocument>);
      return deletedCount === 1 ? "succeeded" : "lost";
    };

    const [endpoint, event] = await Promise.all([
      db.collection<DeliveryEndpoint & { deleted?: boolean }>(WEBHOOK_ENDPOINTS_COLLECTION).findOne({ _id: delivery.endpoint }),
      db.collection<FannedOutEvent>(EVENTS_COLLECTION).findOne({ _id: delivery.event }),
    ]);
    if (!endpoint || endpoint.deleted) {
      // A deleted endpoint will never answer: no event waits for it any more.
      await pullPendingEndpoint(db.collection<FannedOutEvent>(EVENTS_COLLECTION), delivery.event, delivery.endpoint);
      return giveUp("endpoint_deleted");
    }
    if (endpoint.status !== "enabled") return giveUp("endpoint_disabled");
    if (!event) {
      const ageMs = this.now() - delivery.created * 1000;
      if (ageMs > EVENT_RETENTION_MS) return giveUp("event_expired");
      // Queued by a relay that copies the event a moment later (or crashed first, and a sweep will): look
      // again soon while young, then every few seconds.
      const delay = ageMs < EVENT_NOT_YET_COPIED_SOON_FOR_MS ? EVENT_NOT_YET_COPIED_SOON_MS : EVENT_NOT_YET_COPIED_DELAY_MS;
      this.nextOwnDue = Math.min(this.nextOwnDue, this.now() + delay);
      return release({ $set: { due_at: this.now() + delay } }, "waiting");
    }
    // Answered 2xx already (this delivery's attempt before a crash, or a resend): nothing is owed.
    if (!(event.pending_endpoints ?? []).includes(delivery.endpoint)) return done({ ended_reason: "not_pending" });

    const attemptNumber = delivery.attempts + 1;
    const attemptId = attemptIdOf(delivery, attemptNumber);
    // After a claim that did not end cleanly (a worker died holding it), the attempt may be recorded
    // already: its outcome is applied again instead of sending a second time.
    const cleanBefore = (delivery.released_epoch ?? 0) === epoch - 1;
    const recorded =
      (cleanBefore ? null : await db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION).findOne({ _id: attemptId })) ??
      (await this.attempt(event, endpoint, delivery, attemptId));
    const disabled = await applyAttempt(this.env, recorded, endpoint);
    if (disabled) this.metrics.disabled(disabled);

    const atMs = this.now();
    if (recorded.status === "succeeded") {
      const step = await done({ attempts: attemptNumber });
      if (step === "succeeded" && delivery.trigger === "scheduled") this.metrics.delivered(event._id, atMs);
      return step;
    }
    const failed = { attempts: attemptNumber, first_failed_at: delivery.first_failed_at ?? atMs };
    if (disabled) return giveUp("endpoint_disabled", failed);
    // Recovery and manual deliveries are one attempt each; scheduled ones follow the schedule.
    const next =
      delivery.trigger === "scheduled"
        ? nextAttemptAtMs({ schedule: this.schedule, attemptsMade: attemptNumber, failedAtMs: atMs, retryAfterSeconds: recorded.retry_after, random: this.random })
        : null;
    if (next === null) return giveUp("schedule_exhausted", failed);
    this.nextOwnDue = Math.min(this.nextOwnDue, next);
    return release({ $set: { ...failed, due_at: next } }, "retry");
  }

  /** Sends one attempt, counts it, and records it (the stored one stands when this id was recorded already). */
  private async attempt(event: FannedOutEvent, endpoint: DeliveryEndpoint, delivery: DeliveryDocument, attemptId: string): Promise<AttemptDocument> {
    const made = await performAttempt(this.env, { event, endpoint, trigger: delivery.trigger, delivery: delivery._id, attemptId });
    this.metrics.attempted(made);
    return recordAttempt(this.context.db, made);
  }
}

/** The worker task (worker/tasks.ts): declares the indexes, then runs the deliveries queue until stopped. */
export function deliveryTask(options: DeliveryTaskOptions = {}): WorkerTask {
  return {
    name: "webhook-deliveries",
    start(context: WorkerContext): RunningTask {
      const worker = new DeliveryWorker(context, options);
      queueDepthGauges(context.metrics, context.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION));
      const indexes = ensureDeliveryIndexes(context.db).catch((error: unknown) => context.logger.warn({ err: error }, "delivery indexes not declared"));
      worker.start(options.pollMs);
      return {
        async stop() {
          await indexes;
          await worker.stop();
        },
      };
    },
  };
}
