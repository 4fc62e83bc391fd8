import { isDuplicateKeyError } from "@rms/proto";
import type { ClientSession, Db, Filter, MongoBulkWriteError } from "mongodb";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { wakeLanes, type LaneWork } from "./lanes.js";
import {
  scheduledDeliveryId,
  WEBHOOK_DELIVERIES_COLLECTION,
  WEBHOOK_ENDPOINTS_COLLECTION,
  type DeliveryDocument,
  type DeliveryEndpoint,
  type FannedOutEvent,
} from "./model.js";

/** The fields the relay's events carry that fan-out reads. */
export interface RelayedEvent {
  _id: string;
  type: string;
  account: string;
  livemode: boolean;
  /** The snapshot of the object the event is about; its `id` is an endpoint's for `webhook_endpoint.*`. */
  object?: { id?: unknown };
}

const OPERATION_ALONE = { timeoutMS: 5_000 } as const;

/** True when an endpoint's `enabled_events` asks for this type: `*` or the exact type. */
export function wantsEvent(enabledEvents: readonly string[], type: string): boolean {
  return enabledEvents.includes("*") || enabledEvents.includes(type);
}

function allDuplicates(error: unknown): boolean {
  if (isDuplicateKeyError(error)) return true;
  const writeErrors = (error as Partial<MongoBulkWriteError>).writeErrors;
  const list = Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : [];
  return list.length > 0 && list.every((e) => e.code === 11000);
}

/**
 * The relay's `prepare` hook for webhooks (storage/relay.ts): before events are copied into `events`,
 * each gets one scheduled delivery per enabled endpoint of its account and mode that wants its type, and
 * carries those endpoints as `pending_endpoints`. Deliveries are inserted first, by ids made from event
 * and endpoint (a repeat is a duplicate key, nothing new), so an event in `events` always has its
 * deliveries. An event already in `events` was fanned out before its insert: it is left as it is, so a
 * relay repeated after a crash never adds a delivery its stored `pending_endpoints` does not name.
 */
/** How a fan-out runs inside a transaction: its reads and inserts with `session`, its lanes woken after the commit. */
export interface FanOutInTransaction {
  readonly session: ClientSession;
  /** Receives the lanes to wake (lanes.ts `wakeLanes`), which the caller wakes once the transaction has committed. */
  readonly wakeAfter: LaneWork[];
}

export function webhookFanOut(db: Db, now: () => number = Date.now) {
  const events = db.collection<FannedOutEvent>(EVENTS_COLLECTION);
  const endpoints = db.collection<DeliveryEndpoint>(WEBHOOK_ENDPOINTS_COLLECTION);
  const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);

  /**
   * With `transaction`, everything is written with its session and the lanes are left to wake after its commit
   * (a lane's write inside it would meet the workers' writes of the same lane); alone, each write stands by itself.
   */
  return async function prepare<E extends RelayedEvent>(
    batch: readonly E[],
    transaction?: FanOutInTransaction,
  ): Promise<(E & { pending_endpoints?: string[]; undelivered?: true })[]> {
    if (batch.length === 0) return [];
    // Inside a transaction its session bounds the operations (a time limit of their own is not allowed there).
    const operation = transaction ? { session: transaction.session } : OPERATION_ALONE;
    // One read of endpoints per tenant in the batch (a document's events share one tenant).
    const byTenant = new Map<string, Pick<DeliveryEndpoint, "_id" | "enabled_events">[]>();
    for (const event of batch) {
      const key = `${event.account}\u0000${event.livemode}`;
      if (byTenant.has(key)) continue;
      const found = await endpoints
        .find({ account: event.account, livemode: event.livemode, status: "enabled" } as Filter<DeliveryEndpoint>, {
          projection: { _id: 1, enabled_events: 1 },
          ...operation,
        })
        .toArray();
      byTenant.set(key, found);
    }
    // An endpoint never gets an event about itself (`webhook_endpoint.disabled` goes to the account's other
    // endpoints, even if this one is enabled again before the event is copied).
    const wanting = new Map(
      batch.map((event) => [
        event._id,
        (byTenant.get(`${event.account}\u0000${event.livemode}`) ?? []).filter(
          (e) => e._id !== event.object?.id && wantsEvent(e.enabled_events ?? [], event.type),
        ),
      ]),
    );

    // Only events some endpoint wants need to know whether they were copied before (with no endpoint, the
    // copy of an event copied before is a duplicate key whatever it carries).
    const asked = batch.filter((e) => wanting.get(e._id)!.length > 0).map((e) => e._id);
    const copied = new Set(
      asked.length === 0
        ? []
        : (await events.find({ _id: { $in: asked } } as Filter<FannedOutEvent>, { projection: { _id: 1 }, ...operation }).toArray()).map((e) => e._id),
    );

    const created = Math.floor(now() / 1000);
    const dueAt = now();
    const toInsert: DeliveryDocument[] = [];
    const prepared = batch.map((event) => {
      if (copied.has(event._id)) return event;
      const endpointsOfEvent = wanting.get(event._id)!;
      for (const endpoint of endpointsOfEvent) {
        toInsert.push({
          _id: scheduledDeliveryId(event._id, endpoint._id),
          account: event.account,
          livemode: event.livemode,
          event: event._id,
          endpoint: endpoint._id,
          trigger: "scheduled",
          status: "pending",
          due_at: dueAt,
          attempts: 0,
          first_failed_at: null,
          lease_owner: null,
          lease_until: null,
          epoch: 0,
          created,
        });
      }
      // `undelivered` is the indexed form of "an endpoint still waits" (events list, delivery_success).
      return { ...event, pending_endpoints: endpointsOfEvent.map((e) => e._id), ...(endpointsOfEvent.length > 0 ? { undelivered: true as const } : {}) };
    });
    if (toInsert.length > 0) {
      try {
        await deliveries.insertMany(toInsert, { ordered: false, ...operation });
      } catch (error) {
        // (Inside a transaction a duplicate aborts it: the caller's transaction is retried, and nothing is fanned out twice.)
        if (transaction || !allDuplicates(error)) throw error;
      }
      // After the insert (a repeat after a crash wakes them again): each endpoint's lane gets its turn.
      if (transaction) transaction.wakeAfter.push(...toInsert);
      else await wakeLanes(db, toInsert, dueAt);
    }
    return prepared;
  };
}

export type WebhookFanOut = ReturnType<typeof webhookFanOut>;
