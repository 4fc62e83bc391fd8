import { defineOperation } from "../../engine/operation.js";
import { DeletedWebhookEndpointObject, ENDPOINT_ID_PATH } from "./objects.js";

/** DELETE /v1/webhook_endpoints/:id: permanent; its slot of the 16 is free at once. */
export const deleteWebhookEndpoint = defineOperation({
  method: "DELETE",
  path: "/v1/webhook_endpoints/:id",
  summary: "Delete a webhook endpoint",
  scope: "webhooks:write",
  pathParameters: ENDPOINT_ID_PATH,
  success: { status: 200, description: "The deletion result.", object: DeletedWebhookEndpointObject },
  errors: ["resource_missing"],
  service: "webhookEndpoints",
  rpc: "deleteWebhookEndpoint",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ id }) => ({ id }),
});
