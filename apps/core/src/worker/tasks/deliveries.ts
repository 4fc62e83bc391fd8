// The webhook deliveries task: the shared poller over the deliveries queue of webhook-deliveries/.
import { queueDepthGauges } from "../../webhook-deliveries/metrics.js";
import { DELIVERY_QUEUE, WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDocument } from "../../webhook-deliveries/model.js";
import { DeliveryQueue, ensureDeliveryIndexes, type ClaimedFlight, type DeliveryQueueOptions } from "../../webhook-deliveries/queue.js";
import { ENDPOINTS_PER_TENANT } from "../../webhook-endpoints/model.js";
import { QueuePoller, queueTask } from "./poller.js";
import type { WorkerContext, WorkerTask } from "./task.js";

/**
 * Deliveries one worker process attempts at once: twice what one account's endpoints may hold in flight
 * (16 endpoints x WEBHOOK_ENDPOINT_CONCURRENCY, 128 by default), so one account's slow or dead endpoints
 * never hold every slot of a worker. An attempt in flight is a socket and a timer: receivers are slow in
 * parallel, not the worker; the database work is the claims and releases, which come one at a time per
 * worker as attempts end.
 */
export function deliverySlots(endpointConcurrency: number): number {
  return 2 * ENDPOINTS_PER_TENANT * endpointConcurrency;
}
/**
 * How often a worker with a free slot reads the queue's counter (one document by `_id`) while its wake-up
 * stream is not open. A change stream on the counter wakes it at once when the counter moves
 * (QueueSignal.watch); while that stream is open the reads are only its backstop, every WAKE_UP_BACKSTOP_MS
 * (poller.ts), and a stream not yet open or failed falls back on these.
 */
export const DELIVERY_POLL_MS = 100;
/**
 * Claims one worker makes at once: a claim is two single-document writes (the lane's turn, the delivery's
 * lease), so one at a time capped a worker at about 100 claims a second whatever the endpoints could take.
 */
export const DELIVERY_CLAIMS_AT_ONCE = 4;
/**
 * How often a worker with a free slot claims even when the counter has not moved: for deliveries inserted
 * without a signal and expired leases. Between these it reads only the counter: a claim is a
 * `findAndModify` on the primary, a counter read a lookup by `_id`. The retries a worker schedules itself
 * it claims when they come due.
 */
export const DELIVERY_FULL_POLL_MS = 2_000;

export interface DeliveryTaskOptions extends Pick<DeliveryQueueOptions, "leaseMs" | "transport" | "now" | "random" | "bookkeepingWindowMs"> {
  readonly concurrency?: number;
  readonly pollMs?: number;
}

/**
 * The deliveries queue of one worker process (not yet started): up to `concurrency` deliveries in hand,
 * each claimed and attempted by the webhook-deliveries domain (webhook-deliveries/queue.ts).
 */
export function deliveriesPoller(context: WorkerContext, options: DeliveryTaskOptions = {}): QueuePoller<ClaimedFlight> {
  return deliveriesQueue(context, options).poller;
}

/** The deliveries queue of one worker process and its poller (not yet started); `queue.close()` after the poller's stop. */
export function deliveriesQueue(context: WorkerContext, options: DeliveryTaskOptions = {}): { queue: DeliveryQueue; poller: QueuePoller<ClaimedFlight> } {
  const { db, logger } = context;
  const { leaseMs, transport, now, random, bookkeepingWindowMs } = options;
  const queue = new DeliveryQueue({
    db,
    logger,
    owner: context.workerId,
    settings: context.settings,
    metrics: context.metrics,
    leaseMs,
    transport,
    now,
    random,
    bookkeepingWindowMs,
    written: context.written,
    lookAgainAt: (atMs) => poller.lookAgainAt(atMs),
  });
  const poller: QueuePoller<ClaimedFlight> = new QueuePoller({
    name: "webhook-deliveries",
    logger,
    concurrency: options.concurrency ?? deliverySlots(context.settings.webhookEndpointConcurrency),
    claimsAtOnce: DELIVERY_CLAIMS_AT_ONCE,
    claim: async () => (await queue.claimFlights(1))[0] ?? null,
    claimSome: () => queue.claimFlights(),
    async work(claimed, lane) {
      try {
        // Stopping: what the flight has not sent yet goes back to the queue at once.
        for (const { dueAt } of await queue.processFlight(claimed, () => lane.stopping())) if (dueAt !== undefined) poller.lookAgainAt(dueAt);
      } catch (error) {
        logger.warn({ err: error, deliveries: claimed.deliveries.map((d) => d._id) }, "delivery failed; its lease will expire and it is retried");
      }
    },
    signal: () => DELIVERY_QUEUE.read(db),
    wakeUps: (wake, streamOpen) => DELIVERY_QUEUE.watch(db, wake, logger, streamOpen),
    signalEveryMs: options.pollMs ?? DELIVERY_POLL_MS,
    idleMs: DELIVERY_FULL_POLL_MS,
    now,
  });
  return { queue, poller };
}

/** The deliveries task: the queue's depth gauges and indexes, then its poller until stopped. */
export function deliveryTask(options: DeliveryTaskOptions = {}): WorkerTask {
  return queueTask("webhook-deliveries", (context) => {
    queueDepthGauges(context.metrics, context.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION));
    const { queue, poller } = deliveriesQueue(context, options);
    return { indexes: ensureDeliveryIndexes(context.db), poller, close: () => queue.close() };
  });
}
