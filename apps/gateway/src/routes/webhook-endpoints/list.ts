import { optionalInteger, optionalString } from "../../http/params.js";
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, pageParams } from "../../schema/params.js";
import { defineOperation } from "../operation.js";
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
    const limit = optionalInteger(params, "limit", { min: 1, max: LIST_LIMIT_MAX }, "limit_invalid") ?? LIST_LIMIT_DEFAULT;
    // Both cursors at once and malformed cursors are core's to refuse (one rule, one place).
    const startingAfter = optionalString(params, "starting_after") ?? "";
    const endingBefore = optionalString(params, "ending_before") ?? "";
    return { tenant, limit, startingAfter, endingBefore };
  },
  reply: (page) => ({ items: page.webhookEndpoints, hasMore: page.hasMore }),
});
