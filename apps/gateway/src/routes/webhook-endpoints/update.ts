import { optionalEnum, optionalMetadata, optionalString } from "../../parsing/params.js";
import { metadataParam } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { descriptionParam, ENDPOINT_ID_PATH, ENDPOINT_PARAMS, enabledEventsParam, STATUS_NAMES, statusToProto, WebhookEndpointObject } from "./objects.js";

/** POST /v1/webhook_endpoints/:id: changes the given fields, 200 with the endpoint. */
export const updateWebhookEndpoint = defineOperation({
  method: "POST",
  path: "/v1/webhook_endpoints/:id",
  summary: "Update a webhook endpoint",
  scope: "webhooks:write",
  pathParameters: ENDPOINT_ID_PATH,
  parameters: { ...ENDPOINT_PARAMS, metadata: metadataParam(true) },
  success: { status: 200, description: "The updated endpoint (without its secret).", object: WebhookEndpointObject },
  errors: ["resource_missing", "parameter_missing", "parameter_invalid", "parameter_invalid_empty", "url_invalid", "string_too_long", "metadata_invalid"],
  service: "webhookEndpoints",
  rpc: "updateWebhookEndpoint",
  request({ params, path, tenant }) {
    const url = optionalString(params, "url");
    const enabledEvents = enabledEventsParam(params);
    const status = optionalEnum(params, "status", STATUS_NAMES);
    const description = descriptionParam(params);
    const metadata = optionalMetadata(params);
    return {
      tenant,
      id: path["id"] ?? "",
      ...(url !== undefined ? { url } : {}),
      ...(enabledEvents !== undefined ? { enabledEvents: { types: enabledEvents } } : {}),
      status: statusToProto(status),
      ...(description !== undefined ? { description } : {}),
      metadata: metadata?.entries ?? [],
      clearMetadata: metadata?.clear ?? false,
    };
  },
  reply: ({ webhookEndpoint }) => webhookEndpoint,
});
