import { ENDPOINT_DISABLED_REASONS } from "@rms/proto";
import type { EventPayload, Operation } from "../../engine/operation.js";
import { WebhookEndpointObject } from "./objects.js";
import { listWebhookAttempts } from "./attempts.js";
import { createWebhookEndpoint } from "./create.js";
import { deleteWebhookEndpoint } from "./delete.js";
import { listWebhookEndpoints } from "./list.js";
import { recoverWebhookEndpoint } from "./recover.js";
import { resendEvent } from "./resend.js";
import { retrieveWebhookEndpoint } from "./retrieve.js";
import { rotateWebhookEndpointSecret } from "./rotate-secret.js";
import { updateWebhookEndpoint } from "./update.js";
import { retrieveWebhookEndpointDeliveryStats } from "./delivery-stats.js";
import { listEventDeliveries } from "./event-deliveries.js";

/** Every public operation on webhook endpoints, their attempts and resends (all under `webhooks:write`). */
export const WEBHOOK_ENDPOINT_OPERATIONS: readonly Operation[] = [
  listWebhookEndpoints,
  createWebhookEndpoint,
  retrieveWebhookEndpoint,
  updateWebhookEndpoint,
  deleteWebhookEndpoint,
  rotateWebhookEndpointSecret,
  listWebhookAttempts,
  retrieveWebhookEndpointDeliveryStats,
  recoverWebhookEndpoint,
  resendEvent,
  listEventDeliveries,
];

/** The operational event of an endpoint, delivered to the account's other endpoints that subscribe to it. */
export const WEBHOOK_ENDPOINT_EVENTS: readonly EventPayload[] = [
  {
    type: "webhook_endpoint.disabled",
    summary:
      "An endpoint was disabled: `reason` is `gone` (it answered 410) or `failing` (5 days of failed attempts); `data.object` is the endpoint, without " +
      "its secret.",
    object: WebhookEndpointObject,
    reasons: ENDPOINT_DISABLED_REASONS,
  },
];
