import { exampleId, idPattern, type EventDelivery, type ListEventDeliveriesResponse } from "@rms/proto";
import { constant, field, publicObject, schemaRef } from "../../schema/objects.js";
import { idSchema } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";

/** One event's delivery to one endpoint. */
export const EventDeliveryObject = publicObject<EventDelivery & { eventId: string }>("WebhookDelivery", {
  object: constant("webhook_delivery"),
  event: field(idSchema("evt"), (d) => d.eventId),
  webhook_endpoint: field(idSchema("we"), (d) => d.webhookEndpointId),
  status: field(
    {
      type: "string",
      enum: ["pending", "succeeded", "failed", "none"],
      description:
        "`pending`: attempts go on (`next_attempt_at`); `succeeded`: an attempt got a 2xx; `failed`: the retries ended without one (`ended_reason`); " +
        "`none`: no delivery was scheduled (the endpoint did not exist, or did not subscribe to the type, when the event happened).",
    },
    (d) => d.status,
  ),
  attempts: field(
    { type: "integer", minimum: 0, description: "Attempts the scheduled delivery made (resends and recoveries are counted in the attempts list)." },
    (d) => d.attempts,
  ),
  next_attempt_at: field({ type: ["integer", "null"], description: "Unix seconds: when the next attempt is due, while `pending`." }, (d) =>
    d.nextAttemptAt === undefined ? null : Number(d.nextAttemptAt),
  ),
  ended_reason: field(
    {
      type: ["string", "null"],
      description: "Why a `failed` delivery ended: `schedule_exhausted` (every retry failed), `endpoint_disabled`, `endpoint_deleted`, `event_expired`.",
    },
    (d) => d.endedReason ?? null,
  ),
  subscribed: field({ type: "boolean", description: "The endpoint subscribes to the event's type now: a resend to it is accepted." }, (d) => d.subscribed),
});

/** The list envelope of an event's deliveries: one per endpoint of the account and mode (at most 16). */
export const EventDeliveryListObject = publicObject<ListEventDeliveriesResponse>(
  "WebhookDeliveryList",
  {
    object: constant("list"),
    url: field({ type: "string", pattern: `^/v1/events/${idPattern("evt")}/deliveries$` }, (page) => `/v1/events/${page.eventId}/deliveries`),
    has_more: field({ type: "boolean", const: false, description: "Always false: every endpoint is in the one page." }, () => false),
    data: field({ type: "array", maxItems: 16, items: schemaRef(EventDeliveryObject.name) }, (page) =>
      page.deliveries.map((d) => EventDeliveryObject.render({ ...d, eventId: page.eventId })),
    ),
  },
  [EventDeliveryObject as never],
);

/** GET /v1/events/:id/deliveries: the event's delivery to each endpoint, with the next attempt or why it ended. */
export const listEventDeliveries = defineOperation({
  method: "GET",
  path: "/v1/events/:id/deliveries",
  summary: "List an event's deliveries to the webhook endpoints",
  scope: "webhooks:write",
  pathParameters: { id: { example: exampleId("evt"), schema: { type: "string", description: "The event id." } } },
  success: {
    status: 200,
    description:
      "The event's delivery to each endpoint of the account and mode, newest endpoint first: pending with its next attempt, succeeded, failed with " +
      "why, or none.",
    object: EventDeliveryListObject,
  },
  errors: ["resource_missing"],
  service: "webhookEndpoints",
  rpc: "listEventDeliveries",
  request: ({ path, tenant }) => ({ tenant, eventId: path["id"] ?? "" }),
  reply: (page) => page,
});
