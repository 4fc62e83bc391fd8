import { defineOperation } from "../../engine/operation.js";
import { DeliveryStatsObject } from "./stats-objects.js";
import { ENDPOINT_ID_PATH } from "./objects.js";

/** GET /v1/webhook_endpoints/:id/delivery_stats: the endpoint's delivery health, read from its attempts (docs/webhooks.md). */
export const retrieveWebhookEndpointDeliveryStats = defineOperation({
  method: "GET",
  path: "/v1/webhook_endpoints/:id/delivery_stats",
  summary: "Retrieve a webhook endpoint's delivery statistics",
  scope: "webhooks:write",
  pathParameters: ENDPOINT_ID_PATH,
  success: {
    status: 200,
    description:
      "Success rates over the last hour and day, the failure streak, the latest failure, the pending deliveries and when the next is due, and the last " +
      "24 hours by hour: read from the attempts (kept 30 days) and the queue, with bounded reads.",
    object: DeliveryStatsObject,
  },
  errors: ["resource_missing"],
  service: "webhookEndpoints",
  rpc: "getWebhookEndpointDeliveryStats",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: (stats) => stats,
});
