import { MongoOperationTimeoutError, type Db } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { writeWithin } from "../storage/write.js";
import { wakeLanes } from "../webhook-deliveries/lanes.js";
import {
  attemptIdOf,
  DELIVERY_QUEUE,
  manualDelivery,
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  type AttemptDocument,
  type DeliveryDocument,
} from "../webhook-deliveries/model.js";

/**
 * A resend (`POST /v1/events/{id}/resend`; CONTRACT.md section 7; docs/webhooks.md, "Resend"): the attempt takes
 * a place in the endpoint's lane like any delivery and a worker makes it, so resends never exceed the endpoint's
 * in-flight limit and no process that serves requests holds a connection to the endpoint.
 *
 * The call inserts a `manual` delivery due now, wakes the lane and the workers, then waits for the worker to
 * finish it (point reads of the delivery on `_id`) and reads its attempt (its id is known in advance: the
 * worker's `attemptIdOf` of the delivery's first attempt), until the call's deadline leaves RESEND_ANSWER_MARGIN_MS.
 * The answer is the attempt as made, or, when
 * it was not made in time (the lane is busy, the endpoint slow), the attempt as scheduled: the same id with
 * `status: "pending"`; it is listed under the endpoint's attempts once made. At most RESEND_WAITERS_MAX calls of
 * one process wait at once; the next ones answer the scheduled attempt at once.
 */

/** Time kept at the end of the call to answer after the last look. */
export const RESEND_ANSWER_MARGIN_MS = 300;
/** Longest wait for the attempt (the delivery timeout, 15 s, and a little more). */
export const RESEND_WAIT_MAX_MS = 16_000;
/** Resend calls of one core process waiting for their attempt at once. */
export const RESEND_WAITERS_MAX = 64;

let waiting = 0;

export interface ResendOptions {
  readonly budget?: Budget;
  /** Tests: no wait (0), or a shorter one. */
  readonly waitMs?: number;
  readonly nowMs?: number;
}

export async function scheduleResend(db: Db, tenant: Tenant, eventId: string, endpointId: string, options: ResendOptions = {}): Promise<AttemptDocument> {
  const budget = options.budget ?? UNBOUNDED;
  const nowMs = options.nowMs ?? Date.now();
  const delivery = manualDelivery({ _id: eventId, account: tenant.account, livemode: tenant.livemode }, endpointId, nowMs);
  await writeWithin(budget, (writeOptions) => db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION).insertOne(delivery, writeOptions));
  await wakeLanes(db, [{ endpoint: endpointId, account: tenant.account, livemode: tenant.livemode }], nowMs);
  void DELIVERY_QUEUE.signal(db).catch(() => {});
  const attemptId = attemptIdOf(delivery, 1);
  const made = await waitForAttempt(db, delivery, attemptId, budget, options.waitMs ?? RESEND_WAIT_MAX_MS);
  return made ?? scheduledAttempt(delivery, attemptId);
}

/**
 * The attempt once the worker has finished the delivery (recorded and applied: a 2xx has taken the endpoint out
 * of the event's waiting list, a 410 has disabled it), or null when the wait ended first (or too many calls wait
 * already). Point reads of the delivery by `_id`, then one of the attempt.
 */
async function waitForAttempt(db: Db, delivery: DeliveryDocument, attemptId: string, budget: Budget, waitMs: number): Promise<AttemptDocument | null> {
  if (waitMs <= 0 || waiting >= RESEND_WAITERS_MAX) return null;
  waiting++;
  try {
    const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
    const until = Date.now() + waitMs;
    // Time left for one more look: the wait's and the call's (less the answer's margin), 0 once the budget is spent.
    const left = () => {
      let callMs = Number.POSITIVE_INFINITY;
      try {
        callMs = budget.db().timeoutMS ?? Number.POSITIVE_INFINITY;
      } catch {
        return 0;
      }
      return Math.min(until - Date.now(), callMs - RESEND_ANSWER_MARGIN_MS);
    };
    for (let pause = 20; ; pause = Math.min(pause * 2, 250)) {
      const ms = left();
      if (ms <= 0) return null;
      const lookup = { timeoutMS: Math.ceil(ms) };
      try {
        const now = await deliveries.findOne({ _id: delivery._id }, { projection: { status: 1 }, ...lookup });
        if (now && now.status !== "pending") return await db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION).findOne({ _id: attemptId }, lookup);
      } catch (error) {
        // The wait's time ran out during a look: the attempt as scheduled is the answer.
        if (error instanceof MongoOperationTimeoutError) return null;
        throw error;
      }
      const pauseMs = Math.min(pause, left());
      if (pauseMs <= 0) return null;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  } finally {
    waiting--;
  }
}

/** The attempt as scheduled, not made yet: its id, `status: "pending"`, no response. */
function scheduledAttempt(delivery: DeliveryDocument, attemptId: string): AttemptDocument {
  return {
    _id: attemptId,
    account: delivery.account,
    livemode: delivery.livemode,
    event: delivery.event,
    endpoint: delivery.endpoint,
    status: "pending" as AttemptDocument["status"],
    response_status: null,
    response_body: null,
    error: null,
    duration_ms: 0,
    trigger: "manual",
    created: delivery.created,
    delivery: delivery._id,
    disable_endpoint: false,
    retry_after: null,
  } as AttemptDocument;
}
