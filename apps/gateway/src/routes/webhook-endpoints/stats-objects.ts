import type { DeliveryBucket, DeliveryCounts, GetWebhookEndpointDeliveryStatsResponse } from "@rms/proto";
import { constant, field, publicObject, schemaRef } from "../../schema/objects.js";
import { idSchema } from "../../schema/params.js";
import { WebhookAttemptObject } from "./attempt-objects.js";

const COUNT = { type: "integer", minimum: 0 } as const;
const UNIX_OR_NULL = (description: string) => ({ type: ["integer", "null"], description });

/** Attempts of a period by outcome, and the share that succeeded. */
export const DeliveryCountsObject = publicObject<DeliveryCounts | undefined>("WebhookDeliveryCounts", {
  succeeded: field(COUNT, (c) => c?.succeeded ?? 0),
  failed: field(COUNT, (c) => c?.failed ?? 0),
  success_rate: field(
    { type: ["number", "null"], minimum: 0, maximum: 1, description: "succeeded / (succeeded + failed); null when no attempt was made." },
    (c) => {
      const total = (c?.succeeded ?? 0) + (c?.failed ?? 0);
      return total === 0 ? null : Math.round(((c?.succeeded ?? 0) / total) * 10_000) / 10_000;
    },
  ),
});

/** One hour of the chart. */
export const DeliveryBucketObject = publicObject<DeliveryBucket>("WebhookDeliveryBucket", {
  start: field({ type: "integer", description: "Unix seconds: the hour's start." }, (b) => Number(b.start)),
  succeeded: field({ ...COUNT, description: "Attempts in this hour that succeeded." }, (b) => b.succeeded),
  failed: field({ ...COUNT, description: "Attempts in this hour that failed." }, (b) => b.failed),
  pending: field({ ...COUNT, description: "Deliveries still waiting that fell due in this hour (the current hour holds those due later)." }, (b) => b.pending),
});

/** `GET /v1/webhook_endpoints/{id}/delivery_stats`. */
export const DeliveryStatsObject = publicObject<GetWebhookEndpointDeliveryStatsResponse>(
  "WebhookEndpointDeliveryStats",
  {
    object: constant("webhook_endpoint_delivery_stats"),
    webhook_endpoint: field(idSchema("we"), (s) => s.webhookEndpointId),
    as_of: field({ type: "integer", description: "Unix seconds: when these were read." }, (s) => Number(s.asOf)),
    last_hour: field({ ...schemaRef(DeliveryCountsObject.name), description: "Attempts of the last 60 minutes." }, (s) =>
      DeliveryCountsObject.render(s.lastHour),
    ),
    last_day: field({ ...schemaRef(DeliveryCountsObject.name), description: "Attempts of the last 24 hours (the hours of `buckets`)." }, (s) =>
      DeliveryCountsObject.render(s.lastDay),
    ),
    failure_streak: field(
      { ...COUNT, description: "Failed attempts since the latest success (30 days); counted up to 1,000 (1,000 means 1,000 or more)." },
      (s) => s.failureStreak,
    ),
    failing_since: field(UNIX_OR_NULL("The first failed attempt since the latest success; null while the latest attempt succeeded."), (s) =>
      s.failingSince === undefined ? null : Number(s.failingSince),
    ),
    last_failure: field(
      {
        oneOf: [schemaRef(WebhookAttemptObject.name), { type: "null" }],
        description: "The newest failed attempt (30 days), with the receiver's status and body.",
      },
      (s) => (s.lastFailure ? WebhookAttemptObject.render(s.lastFailure) : null),
    ),
    last_success_at: field(UNIX_OR_NULL("The newest successful attempt (30 days)."), (s) => (s.lastSuccessAt === undefined ? null : Number(s.lastSuccessAt))),
    pending: field(
      { ...COUNT, description: "Deliveries waiting for an attempt (first ones and retries); counted up to 1,000 (1,000 means 1,000 or more)." },
      (s) => s.pending,
    ),
    next_attempt_at: field(UNIX_OR_NULL("When the earliest pending delivery is due; in the past while the endpoint's lane works through a backlog."), (s) =>
      s.nextAttemptAt === undefined ? null : Number(s.nextAttemptAt),
    ),
    buckets: field({ type: "array", maxItems: 24, items: schemaRef(DeliveryBucketObject.name), description: "The last 24 hours, oldest first." }, (s) =>
      s.buckets.map((b) => DeliveryBucketObject.render(b)),
    ),
    counted_from: field(
      UNIX_OR_NULL(
        "Set when the day held more than 5,000 attempts: the counts are of the newest 5,000, made from this hour on (Unix seconds); null otherwise.",
      ),
      (s) => (s.attemptsCapped && s.countedFrom !== undefined ? Number(s.countedFrom) : null),
    ),
  },
  [WebhookAttemptObject as never, DeliveryCountsObject as never, DeliveryBucketObject as never],
);
