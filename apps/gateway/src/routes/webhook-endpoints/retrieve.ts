import { defineOperation } from "../../engine/operation.js";
import { ENDPOINT_ID_PATH, WebhookEndpointObject } from "./objects.js";

/** GET /v1/webhook_endpoints/:id (never with its secret). */
export const retrieveWebhookEndpoint = defineOperation({
  method: "GET",
  path: "/v1/webhook_endpoints/:id",
  summary: "Retrieve a webhook endpoint",
  scope: "webhooks:write",
  pathParameters: ENDPOINT_ID_PATH,
  success: { status: 200, description: "The endpoint (without its secret).", object: WebhookEndpointObject },
  errors: ["resource_missing"],
  service: "webhookEndpoints",
  rpc: "getWebhookEndpoint",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ webhookEndpoint }) => webhookEndpoint,
});
