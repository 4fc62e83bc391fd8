import { isDuplicateKeyError } from "@rms/proto";
import type { Db, Filter, MongoBulkWriteError } from "mongodb";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { wakeLanes } from "./lanes.js";
import { scheduledDeliveryId, WEBHOOK_DELIVERIES_COLLECTION, WEBHOOK_ENDPOINTS_COLLECTION, type DeliveryDocument, type DeliveryEndpoint, type FannedOutEvent } from "./model.js";

/** The fields the relay's events carry that fan-out reads. */
export interface RelayedEvent {
  _id: string;
  type: string;
  account: string;
  livemode: boolean;
  /** The snapshot of the object the event is about; its `id` is an endpoint's for `webhook_endpoint.*`. */
  object?: { id?: unknown };
}

const OPERATION = { timeoutMS: 5_000 } as const;

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
export function webhookFanOut(db: Db, now: () => number = Date.now) {
  const events = db.collection<FannedOutEvent>(EVENTS_COLLECTION);
  const endpoints = db.collection<DeliveryEndpoint>(WEBHOOK_ENDPOINTS_COLLECTION);
  const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);

  return async function prepare<E extends RelayedEvent>(batch: readonly E[]): Promise<(E & { pending_endpoints?: string[]; undelivered?: true })[]> {
    if (batch.length === 0) return [];
    // One read of endpoints per tenant in the batch (a document's events share one tenant).
    const byTenant = new Map<string, Pick<DeliveryEndpoint, "_id" | "enabled_events">[]>();
    for (const event of batch) {
      const key = `${event.account}\u0000${event.livemode}`;
      if (byTenant.has(key)) continue;
      const found = await endpoints
        .find({ account: event.account, livemode: event.livemode, status: "enabled" } as Filter<DeliveryEndpoint>, {
          projection: { _id: 1, enabled_events: 1 },
          ...OPERATION,
        })
        .toArray();
      byTenant.set(key, found);
    }
    // An endpoint never gets an event about itself (`webhook_endpoint.disabled` goes to the account's other
    // endpoints, even if this one is enabled again before the event is copied).
    const wanting = new Map(
      batch.map((event) => [
        event._id,
        (byTenant.get(`${event.account}\u0000${event.livemode}`) ?? []).filter((e) => e._id !== event.object?.id && wantsEvent(e.enabled_events ?? [], event.type)),
      ]),
    );

    // Only events some endpoint wants need to know whether they were copied before (with no endpoint, the
    // copy of an event copied before is a duplicate key whatever it carries).
    const asked = batch.filter((e) => wanting.get(e._id)!.length > 0).map((e) => e._id);
    const copied = new Set(
      asked.length === 0 ? [] : (await events.find({ _id: { $in: asked } } as Filter<FannedOutEvent>, { projection: { _id: 1 }, ...OPERATION }).toArray()).map((e) => e._id),
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
        await deliveries.insertMany(toInsert, { ordered: false, ...OPERATION });
      } catch (error) {
        if (!allDuplicates(error)) throw error;
      }
      // After the insert (a repeat after a crash wakes them again): each endpoint's lane gets its turn.
      await wakeLanes(db, toInsert, dueAt);
    }
    return prepared;
  };
}

export type WebhookFanOut = ReturnType<typeof webhookFanOut>;
