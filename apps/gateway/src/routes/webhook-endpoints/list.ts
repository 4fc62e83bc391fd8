import { pageParams, pageRequest } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { WebhookEndpointListObject } from "./objects.js";

/** GET /v1/webhook_endpoints: one page, newest first, in the list envelope. */
export const listWebhookEndpoints = defineOperation({
  method: "GET",
  path: "/v1/webhook_endpoints",
  summary: "List webhook endpoints",
  scope: "webhooks:write",
  parameters: pageParams("we", "webhook endpoint"),
  success: { status: 200, description: "One page of endpoints, newest first (without secrets).", object: WebhookEndpointListObject },
  errors: ["limit_invalid", "parameter_invalid"],
  service: "webhookEndpoints",
  rpc: "listWebhookEndpoints",
  request({ params, tenant }) {
    return { tenant, ...pageRequest(params) };
  },
  reply: (page) => ({ items: page.webhookEndpoints, hasMore: page.hasMore }),
});
