import type { Collection } from "mongodb";
import type { Counter, Gauge, Histogram, Registry } from "prom-client";
import { idTimeMs } from "../ids.js";
import { counterIn, gaugeIn, histogramIn } from "../metrics-registry.js";
import { SECRET_UNAVAILABLE } from "./attempt.js";
import type { AttemptError } from "../webhooks/deliver.js";
import type { AttemptDocument, DeliveryDocument } from "./model.js";
import type { DisableReason } from "../webhooks/schedule.js";

/** Every error an attempt records (deliver.ts, attempt.ts): the label values of a failed attempt; anything else is `other`. */
const ATTEMPT_ERRORS: Record<AttemptError | typeof SECRET_UNAVAILABLE, true> = {
  timeout: true,
  dns_failed: true,
  connection_failed: true,
  tls_failed: true,
  invalid_response: true,
  redirect: true,
  http_error: true,
  blocked_address: true,
  invalid_url: true,
  secret_unavailable: true,
};

/** Why a delivery ended failed (`ended_reason`), as the worker sets it. */
export type GiveUpReason = "schedule_exhausted" | "endpoint_disabled" | "endpoint_deleted" | "event_expired";

/** The `outcome` label of an attempt: `succeeded`, or its error kind (a bounded set). */
export function attemptOutcome(attempt: Pick<AttemptDocument, "status" | "error">): string {
  if (attempt.status === "succeeded") return "succeeded";
  return attempt.error !== null && Object.hasOwn(ATTEMPT_ERRORS, attempt.error) ? attempt.error : "other";
}

/** Seconds: a local receiver answers in milliseconds; an attempt ends at the 15 s timeout. */
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15];
/** Seconds from an event to its delivery: sub-second on a healthy stack, up to the days the retry schedule spans. */
const DELAY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 3 * 3600, 12 * 3600, 86400, 3 * 86400];

/** The deliveries worker's counters and histograms, in the worker process's registry (WorkerContext.metrics). */
export class DeliveryMetrics {
  private readonly claimedTotal: Counter;
  private readonly attemptsTotal: Counter<"outcome">;
  private readonly attemptSeconds: Histogram<"status">;
  private readonly delaySeconds: Histogram;
  private readonly disabledTotal: Counter<"reason">;
  private readonly givenUpTotal: Counter<"reason">;
  private readonly inFlightGauge: Gauge;

  constructor(registry: Registry) {
    this.claimedTotal = counterIn(registry, {
      name: "webhook_deliveries_claimed_total",
      help: "Deliveries this worker claimed from the queue (each claim is followed by at most one attempt).",
    });
    this.attemptsTotal = counterIn(registry, {
      name: "webhook_delivery_attempts_total",
      help: "Delivery attempts this worker made, by outcome: succeeded, or the error kind of a failure (http_error, timeout, connection_failed, ...).",
      labelNames: ["outcome"],
    });
    this.attemptSeconds = histogramIn(registry, {
      name: "webhook_delivery_attempt_duration_seconds",
      help: "Duration of one delivery attempt (the POST and its answer), by status (succeeded or failed).",
      labelNames: ["status"],
      buckets: ATTEMPT_BUCKETS,
    });
    this.delaySeconds = histogramIn(registry, {
      name: "webhook_delivery_delay_seconds",
      help: "Time from an event's creation to its successful delivery to an endpoint (scheduled deliveries, retries included).",
      buckets: DELAY_BUCKETS,
    });
    this.disabledTotal = counterIn(registry, {
      name: "webhook_endpoints_disabled_total",
      help: "Endpoints this worker disabled, by reason: gone (a 410) or failing (5 days of failures).",
      labelNames: ["reason"],
    });
    this.givenUpTotal = counterIn(registry, {
      name: "webhook_deliveries_failed_total",
      help: "Deliveries this worker ended as failed, by reason: schedule_exhausted, endpoint_disabled, endpoint_deleted, event_expired.",
      labelNames: ["reason"],
    });
    this.inFlightGauge = gaugeIn(registry, {
      name: "webhook_deliveries_in_flight",
      help: "Deliveries this worker holds now (claimed, attempt not yet ended).",
    });
  }

  claimed(): void {
    this.claimedTotal.inc();
    this.inFlightGauge.inc();
  }

  /** The claim has ended, whatever became of it. */
  released(): void {
    this.inFlightGauge.dec();
  }

  /** An attempt this worker sent (not one recorded before a crash and applied again). */
  attempted(attempt: AttemptDocument): void {
    this.attemptsTotal.inc({ outcome: attemptOutcome(attempt) });
    // Without an open secret nothing was sent: there is no duration to time.
    if (attempt.error !== SECRET_UNAVAILABLE) this.attemptSeconds.observe({ status: attempt.status }, attempt.duration_ms / 1000);
  }

  /** A scheduled delivery succeeded: how long after its event. */
  delivered(eventId: string, nowMs: number): void {
    this.delaySeconds.observe(Math.max(0, nowMs - idTimeMs(eventId)) / 1000);
  }

  disabled(reason: DisableReason): void {
    this.disabledTotal.inc({ reason });
  }

  gaveUp(reason: GiveUpReason): void {
    this.givenUpTotal.inc({ reason });
  }
}

/** Least time between two reads of the queue's depth: the read counts every pending delivery, and every worker and scrape would repeat it. */
export const QUEUE_SAMPLE_MS = 10_000;

/**
 * The queue's depth, read when Prometheus scrapes and at most every QUEUE_SAMPLE_MS (a scrape in between
 * gets the last figures): pending deliveries, those due now, and how long the most overdue one has waited.
 * Every worker reports the same queue, so an operator takes the max over workers, not the sum.
 */
export function queueDepthGauges(registry: Registry, deliveries: Collection<DeliveryDocument>, now: () => number = Date.now): void {
  let sampledAt = Number.NEGATIVE_INFINITY;
  let sampling: Promise<void> | null = null;
  let figures = { pending: 0, due: 0, oldestDueAgeSeconds: 0 };
  const sample = async () => {
    const at = now();
    const [row] = await deliveries
      .aggregate<{ pending: number; due: number; oldest: number | null }>(
        [
          { $match: { status: "pending" } },
          { $group: { _id: null, pending: { $sum: 1 }, due: { $sum: { $cond: [{ $lte: ["$due_at", at] }, 1, 0] } }, oldest: { $min: "$due_at" } } },
        ],
        { maxTimeMS: 2_000 },
      )
      .toArray();
    const oldest = row?.oldest ?? null;
    figures = { pending: row?.pending ?? 0, due: row?.due ?? 0, oldestDueAgeSeconds: oldest !== null && oldest <= at ? (at - oldest) / 1000 : 0 };
    sampledAt = at;
  };
  const fresh = async () => {
    if (now() - sampledAt >= QUEUE_SAMPLE_MS) {
      sampling ??= sample()
        .catch(() => {
          // The database is away: the last figures stand, and the next scrape tries again.
        })
        .finally(() => {
          sampling = null;
        });
      await sampling;
    }
    return figures;
  };
  gaugeIn(registry, {
    name: "webhook_deliveries_pending",
    help: `Deliveries waiting in the queue (due now or a retry later), all workers together; read at most every ${QUEUE_SAMPLE_MS / 1000} s.`,
    async collect() {
      this.set((await fresh()).pending);
    },
  });
  gaugeIn(registry, {
    name: "webhook_deliveries_due",
    help: `Deliveries due now (those being attempted included), all workers together; read at most every ${QUEUE_SAMPLE_MS / 1000} s.`,
    async collect() {
      this.set((await fresh()).due);
    },
  });
  gaugeIn(registry, {
    name: "webhook_deliveries_oldest_due_age_seconds",
    help:
      `How long the most overdue pending delivery has been due (0 when none is; one being attempted included); read at most every ` +
      `${QUEUE_SAMPLE_MS / 1000} s.`,
    async collect() {
      this.set((await fresh()).oldestDueAgeSeconds);
    },
  });
}
