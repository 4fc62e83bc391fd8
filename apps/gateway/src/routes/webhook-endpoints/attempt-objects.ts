import { ATTEMPT_STATUSES, ATTEMPT_TRIGGERS, idPattern, type ListWebhookAttemptsResponse, type WebhookAttempt } from "@rms/proto";
import { constant, field, publicObject, schemaRef } from "../../schema/objects.js";
import { idSchema, LIST_LIMIT_MAX } from "../../schema/params.js";

/** The public attempt object of CONTRACT.md section 7, fields in contract order. */
export const WebhookAttemptObject = publicObject<WebhookAttempt>("WebhookAttempt", {
  id: field(idSchema("wa", "An attempt id: `wa_` and an opaque suffix."), (a) => a.id),
  object: constant("webhook_attempt"),
  event: field(idSchema("evt"), (a) => a.eventId),
  webhook_endpoint: field(idSchema("we"), (a) => a.webhookEndpointId),
  status: field(
    {
      type: "string",
      enum: [...ATTEMPT_STATUSES, "pending"],
      description:
        "`pending` only in a resend's answer when its attempt was not made before the call's deadline (the endpoint's lane is busy or the receiver " +
        "slow); the attempt is listed under this id once made.",
    },
    (a) => a.status,
  ),
  response_status: field(
    { type: ["integer", "null"], description: "The receiver's HTTP status; null when no response came." },
    (a) => a.responseStatus ?? null,
  ),
  response_body: field(
    { type: ["string", "null"], description: "The first 1 KiB of the response body; null when no response came." },
    (a) => a.responseBody ?? null,
  ),
  failure_code: field(
    {
      type: ["string", "null"],
      description:
        "Why it failed: `timeout`, `dns_failed`, `connection_failed`, `tls_failed`, `invalid_response`, `redirect`, `http_error`, `blocked_address`, " +
        "`invalid_url`, `secret_unavailable`; null on success.",
    },
    (a) => a.failureCode ?? null,
  ),
  duration_ms: field({ type: "integer", minimum: 0 }, (a) => Number(a.durationMs)),
  trigger: field({ type: "string", enum: [...ATTEMPT_TRIGGERS] }, (a) => a.trigger),
  created: field({ type: "integer", description: "Unix seconds." }, (a) => Number(a.created)),
});

/** The list envelope of one endpoint's attempts; its `url` names the endpoint. */
export const WebhookAttemptListObject = publicObject<ListWebhookAttemptsResponse>(
  "WebhookAttemptList",
  {
    object: constant("list"),
    url: field(
      { type: "string", pattern: `^/v1/webhook_endpoints/${idPattern("we")}/attempts$` },
      (page) => `/v1/webhook_endpoints/${page.webhookEndpointId}/attempts`,
    ),
    has_more: field({ type: "boolean" }, (page) => page.hasMore),
    data: field({ type: "array", maxItems: LIST_LIMIT_MAX, items: schemaRef(WebhookAttemptObject.name) }, (page) =>
      page.webhookAttempts.map((a) => WebhookAttemptObject.render(a)),
    ),
  },
  [WebhookAttemptObject as never],
);

/** The answer of a recovery: how many deliveries it scheduled, and whether events were left for another call. */
export const RecoveryObject = publicObject<{ readonly scheduled: number; readonly hasMore: boolean }>("WebhookRecovery", {
  object: constant("recovery"),
  scheduled: field(
    { type: "integer", minimum: 0, maximum: 10_000, description: "Recovery deliveries scheduled, one per event, at most 10,000 per call." },
    (r) => r.scheduled,
  ),
  has_more: field(
    { type: "boolean", description: "True when more events whose deliveries all failed are left (the call stopped at 10,000): call again for the rest." },
    (r) => r.hasMore,
  ),
});
