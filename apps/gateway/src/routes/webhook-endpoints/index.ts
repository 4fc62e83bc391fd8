import type { Operation } from "../operation.js";
import { listWebhookAttempts } from "./attempts.js";
import { createWebhookEndpoint } from "./create.js";
import { deleteWebhookEndpoint } from "./delete.js";
import { listWebhookEndpoints } from "./list.js";
import { recoverWebhookEndpoint } from "./recover.js";
import { resendEvent } from "./resend.js";
import { retrieveWebhookEndpoint } from "./retrieve.js";
import { rotateWebhookEndpointSecret } from "./rotate-secret.js";
import { updateWebhookEndpoint } from "./update.js";

/** Every public operation on webhook endpoints, their attempts and resends (all under `webhooks:write`). */
export const WEBHOOK_ENDPOINT_OPERATIONS: readonly Operation[] = [
  listWebhookEndpoints,
  createWebhookEndpoint,
  retrieveWebhookEndpoint,
  updateWebhookEndpoint,
  deleteWebhookEndpoint,
  rotateWebhookEndpointSecret,
  listWebhookAttempts,
  recoverWebhookEndpoint,
  resendEvent,
];
