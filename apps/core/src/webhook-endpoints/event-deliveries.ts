import type { Db } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { wantsEvent } from "../webhook-deliveries/fanout.js";
import {
  scheduledDeliveryId,
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  type AttemptDocument,
  type DeliveryDocument,
  type FannedOutEvent,
} from "../webhook-deliveries/model.js";
import { ENDPOINTS_PER_TENANT } from "./model.js";
import type { WebhookEndpointStore } from "./store.js";

/**
 * An event's delivery to each endpoint of its account and mode (`GET /v1/events/{id}/deliveries`; docs/webhooks.md,
 * "An event's deliveries"): what the dashboard's event page shows beside each endpoint's attempts. Read from the
 * event's `pending_endpoints`, the scheduled delivery of each endpoint (a point read of its id, event and endpoint)
 * and, for an endpoint neither pending nor with a delivery left, whether one of its attempts succeeded (a point of
 * `endpoint_event_order`): at most 16 endpoints, so at most 33 small reads, whatever the account holds.
 */

export type EventDeliveryStatus = "pending" | "succeeded" | "failed" | "none";

export interface EventDelivery {
  endpoint: string;
  status: EventDeliveryStatus;
  attempts: number;
  /** Ms, while pending with a delivery queued. */
  nextAttemptAt: number | null;
  endedReason: string | null;
  subscribed: boolean;
}

export async function eventDeliveries(
  db: Db,
  endpoints: WebhookEndpointStore,
  tenant: Tenant,
  event: FannedOutEvent,
  budget: Budget = UNBOUNDED,
): Promise<EventDelivery[]> {
  const { items } = await endpoints.list(tenant, { limit: ENDPOINTS_PER_TENANT }, budget);
  const ids = items.map((endpoint) => scheduledDeliveryId(event._id, endpoint._id));
  const scheduled = await db
    .collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION)
    .find({ _id: { $in: ids } }, { projection: { endpoint: 1, status: 1, attempts: 1, due_at: 1, ended_reason: 1 }, ...budget.db() })
    .toArray();
  const byEndpoint = new Map(scheduled.map((d) => [d.endpoint, d]));
  const waiting = new Set(event.pending_endpoints ?? []);
  const attempts = db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION);
  return Promise.all(
    items.map(async (endpoint): Promise<EventDelivery> => {
      const delivery = byEndpoint.get(endpoint._id);
      const base = {
        endpoint: endpoint._id,
        attempts: delivery?.attempts ?? 0,
        nextAttemptAt: null,
        endedReason: null,
        subscribed: wantsEvent(endpoint.enabled_events, event.type),
      };
      // A 2xx takes the endpoint out of the event's waiting list, whichever attempt got it (a resend, a recovery).
      if (delivery && !waiting.has(endpoint._id) && delivery.status !== "pending") return { ...base, status: "succeeded" };
      if (delivery?.status === "pending") return { ...base, status: "pending", nextAttemptAt: delivery.due_at };
      if (delivery?.status === "failed") return { ...base, status: "failed", endedReason: delivery.ended_reason ?? null };
      if (delivery) return { ...base, status: "succeeded" };
      // No scheduled delivery left: a success deleted it, or none was scheduled.
      if (waiting.has(endpoint._id)) return { ...base, status: "pending" };
      const success = await attempts.findOne(
        { endpoint: endpoint._id, event: event._id, status: "succeeded" },
        // The pair's attempts only (a handful), never the endpoint's whole history.
        { projection: { _id: 1 }, hint: "endpoint_event_order", ...budget.db() },
      );
      return { ...base, status: success ? "succeeded" : "none" };
    }),
  );
}
