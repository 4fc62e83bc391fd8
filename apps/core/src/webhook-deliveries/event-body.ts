import { eventData } from "../events/render.js";
import type { FannedOutEvent } from "./model.js";

/** The API version events are rendered in (CONTRACT.md section 7, in ../shared/docs/); the gateway states the same. */
export const EVENT_API_VERSION = "1.4";

/**
 * The event object exactly as `GET /v1/events/{id}` shows it, as the JSON text a delivery sends and
 * signs. `pending_webhooks` is the count when the attempt is made.
 */
export function eventBody(event: FannedOutEvent): string {
  return JSON.stringify({
    id: event._id,
    object: "event",
    type: event.type,
    created: event.created,
    livemode: event.livemode,
    api_version: EVENT_API_VERSION,
    sequence: event.sequence ?? 0,
    pending_webhooks: event.pending_endpoints?.length ?? 0,
    data: eventData(event),
    request: { id: event.request.id, idempotency_key: event.request.idempotency_key },
  });
}
