import { exampleId } from "@rms/proto";
import { requiredNonEmptyString } from "../../parsing/params.js";
import { defineOperation } from "../../engine/operation.js";
import { WebhookAttemptObject } from "./attempt-objects.js";

/**
 * The core call of a resend waits for its attempt, made by a worker in the endpoint's lane (at most the 15 s
 * delivery timeout once its turn comes), so its deadline is longer than the usual one; past it core answers
 * the attempt as scheduled (`status: "pending"`).
 */
export const RESEND_TIMEOUT_MS = 20_000;

/** POST /v1/events/:id/resend: one attempt, in the endpoint's lane, to the given endpoint; answers the attempt. */
export const resendEvent = defineOperation({
  method: "POST",
  path: "/v1/events/:id/resend",
  summary: "Resend an event to a webhook endpoint",
  scope: "webhooks:write",
  pathParameters: { id: { example: exampleId("evt"), schema: { type: "string", description: "The event id." } } },
  parameters: {
    webhook_endpoint: {
      required: true,
      example: exampleId("we"),
      schema: { type: "string", minLength: 1, description: "The endpoint to deliver to (of the same account and mode; it may be disabled)." },
    },
  },
  success: {
    status: 200,
    description:
      "The attempt, made by a worker in the endpoint's lane before this answer (it may have failed: see `status` and `failure_code`), or, when not " +
      'made within the call\'s deadline, as scheduled: `status: "pending"`, listed under the same id once made.',
    object: WebhookAttemptObject,
  },
  errors: ["resource_missing", "parameter_missing", "parameter_invalid", "parameter_invalid_empty"],
  timeoutMs: RESEND_TIMEOUT_MS,
  service: "webhookEndpoints",
  rpc: "resendEvent",
  request: ({ params, path, tenant }) => ({ tenant, eventId: path["id"] ?? "", webhookEndpointId: requiredNonEmptyString(params, "webhook_endpoint") }),
  reply: ({ webhookAttempt }) => webhookAttempt,
});
