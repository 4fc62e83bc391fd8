import type { Collection, Db, Filter, UpdateFilter } from "mongodb";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { CoreSettings } from "../settings.js";
import { ensureExpiryIndex } from "../storage/expiry.js";
import { LeaseQueue } from "../storage/lease.js";
import { EVENT_RETENTION_MS, EVENTS_COLLECTION } from "../storage/relay.js";
import { DELIVERY_TIMEOUT_MS } from "../webhooks/deliver.js";
import { nextAttemptAtMs } from "../webhooks/schedule.js";
import { applyAttempt, performAttempt, recordAttempt, type DeliveryEnvironment } from "./attempt.js";
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
import { pullPendingEndpoint } from "./pending.js";

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

/** What the deliveries queue of one worker process works with. */
export interface DeliveryQueueOptions {
  readonly db: Db;
  readonly logger: Logger;
  /** The lease owner of what this process claims: unique per worker process. */
  readonly owner: string;
  readonly settings: Pick<CoreSettings, "secretKeyring" | "webhookAllowPrivate" | "webhookRetrySchedule">;
  /** The process's registry, where the deliveries' counters and histograms go (metrics.ts). */
  readonly metrics: Registry;
  readonly leaseMs?: number;
  /** Tests: a certificate authority to trust, a resolver table, a shorter timeout. */
  readonly transport?: DeliveryEnvironment["transport"];
  readonly now?: () => number;
  readonly random?: () => number;
}

/** What became of one claimed delivery and, when it stays queued (a retry, an event not copied yet), when it is due again. */
export interface Processed {
  readonly step: DeliveryStep;
  readonly dueAt?: number;
}

/**
 * The deliveries queue as one worker process takes from it: claims the next due delivery under a lease
 * (storage/lease.ts), makes one attempt of it (attempt.ts) and then, in the release of its lease, makes it
 * due again per the retry schedule or failed; a success deletes a scheduled delivery.
 */
export class DeliveryQueue {
  private readonly queue: LeaseQueue<DeliveryDocument>;
  private readonly deliveries: Collection<DeliveryDocument>;
  private readonly env: DeliveryEnvironment;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly schedule: readonly number[];
  private readonly metrics: DeliveryMetrics;

  constructor(private readonly options: DeliveryQueueOptions) {
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.schedule = options.settings.webhookRetrySchedule;
    this.metrics = new DeliveryMetrics(options.metrics);
    this.deliveries = options.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
    this.queue = new LeaseQueue(this.deliveries, { owner: options.owner, leaseMs: options.leaseMs ?? DELIVERY_LEASE_MS, now: this.now });
    this.env = {
      db: options.db,
      keyring: options.settings.secretKeyring,
      allowPrivate: options.settings.webhookAllowPrivate,
      now: this.now,
      logger: options.logger,
      ...(options.transport ? { transport: options.transport } : {}),
    };
  }

  /** The due delivery whose time came first (dueFilter, DUE_SORT), under this process's lease; null when none is due. */
  async claim(): Promise<DeliveryDocument | null> {
    const claimed = await this.queue.claim(dueFilter(this.now()), DUE_SORT);
    if (claimed) this.metrics.claimed();
    return claimed;
  }

  /** One claimed delivery, to the release of its lease (counted out of the in-flight gauge whatever the outcome). */
  async process(delivery: DeliveryDocument): Promise<Processed> {
    try {
      return await this.attemptOnce(delivery);
    } finally {
      this.metrics.released();
    }
  }

  /** End it without an attempt when there is nothing to deliver to, else attempt it once; then release it. */
  private async attemptOnce(delivery: DeliveryDocument): Promise<Processed> {
    const { db } = this.options;
    const epoch = delivery.epoch;
    // Every release notes its epoch, so the next claim knows whether the one before it ended cleanly.
    const release = async (update: { $set: Partial<DeliveryDocument> }, step: DeliveryStep, dueAt?: number): Promise<Processed> => {
      const held = await this.queue.release(delivery._id, epoch, { $set: { ...update.$set, released_epoch: epoch } } as UpdateFilter<DeliveryDocument>);
      return { step: held ? step : "lost", dueAt };
    };
    // A finished delivery is kept 30 days from its creation, then its TTL index removes it.
    const expires_at = webhookExpiresAt(delivery.created);
    const giveUp = async (reason: GiveUpReason, fields: Partial<DeliveryDocument> = {}): Promise<Processed> => {
      const released = await release({ $set: { ...fields, status: "failed", ended_reason: reason, expires_at } }, "failed");
      if (released.step === "failed") this.metrics.gaveUp(reason);
      return released;
    };
    // A scheduled delivery that succeeded leaves the queue at once (the queue holds work and failures, not
    // history): its attempt records the success, and the event no longer names the endpoint. A recovery
    // delivery stays, `succeeded`: recover reads an event's deliveries to an endpoint to see whether they all failed.
    const done = async (fields: Partial<DeliveryDocument>): Promise<Processed> => {
      if (delivery.trigger !== "scheduled") return release({ $set: { ...fields, status: "succeeded", expires_at } }, "succeeded");
      const { deletedCount } = await this.deliveries.deleteOne({ _id: delivery._id, epoch, lease_owner: this.options.owner } as Filter<DeliveryDocument>);
      return { step: deletedCount === 1 ? "succeeded" : "lost" };
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
      const dueAt = this.now() + delay;
      return release({ $set: { due_at: dueAt } }, "waiting", dueAt);
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
      const ended = await done({ attempts: attemptNumber });
      if (ended.step === "succeeded" && delivery.trigger === "scheduled") this.metrics.delivered(event._id, atMs);
      return ended;
    }
    const failed = { attempts: attemptNumber, first_failed_at: delivery.first_failed_at ?? atMs };
    if (disabled) return giveUp("endpoint_disabled", failed);
    // Recovery and manual deliveries are one attempt each; scheduled ones follow the schedule.
    const next =
      delivery.trigger === "scheduled"
        ? nextAttemptAtMs({ schedule: this.schedule, attemptsMade: attemptNumber, failedAtMs: atMs, retryAfterSeconds: recorded.retry_after, random: this.random })
        : null;
    if (next === null) return giveUp("schedule_exhausted", failed);
    return release({ $set: { ...failed, due_at: next } }, "retry", next);
  }

  /** Sends one attempt, counts it, and records it (the stored one stands when this id was recorded already). */
  private async attempt(event: FannedOutEvent, endpoint: DeliveryEndpoint, delivery: DeliveryDocument, attemptId: string): Promise<AttemptDocument> {
    const made = await performAttempt(this.env, { event, endpoint, trigger: delivery.trigger, delivery: delivery._id, attemptId });
    this.metrics.attempted(made);
    return recordAttempt(this.options.db, made);
  }
}
