import { optionalEnum, optionalMetadata, requiredString } from "../../parsing/params.js";
import { metadataParam } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { SIGNATURE_SCHEMES } from "@rms/proto";
import {
  descriptionParam,
  ENDPOINT_PARAMS,
  enabledEventsParam,
  SIGNATURE_SCHEME_PARAM,
  STATUS_NAMES,
  statusToProto,
  WebhookEndpointWithSecretObject,
} from "./objects.js";

/** POST /v1/webhook_endpoints: 201 with the new endpoint and its secret (shown this once). */
export const createWebhookEndpoint = defineOperation({
  method: "POST",
  path: "/v1/webhook_endpoints",
  summary: "Create a webhook endpoint",
  scope: "webhooks:write",
  parameters: {
    url: { ...ENDPOINT_PARAMS.url, required: true },
    enabled_events: { ...ENDPOINT_PARAMS.enabled_events, required: true },
    status: ENDPOINT_PARAMS.status,
    description: ENDPOINT_PARAMS.description,
    metadata: metadataParam(false),
    signature_scheme: { ...SIGNATURE_SCHEME_PARAM, schema: { ...SIGNATURE_SCHEME_PARAM.schema, default: "v1" } },
  },
  success: {
    status: 201,
    description: "The created endpoint: `v1` with its signing secret (shown only here and on rotation), `v1a` with its public key.",
    object: WebhookEndpointWithSecretObject,
  },
  errors: ["parameter_missing", "parameter_invalid", "parameter_invalid_empty", "url_invalid", "string_too_long", "metadata_invalid", "limit_exceeded"],
  service: "webhookEndpoints",
  rpc: "createWebhookEndpoint",
  request({ params, tenant }) {
    const url = requiredString(params, "url");
    const enabledEvents = enabledEventsParam(params) ?? [];
    const status = optionalEnum(params, "status", STATUS_NAMES);
    const description = descriptionParam(params);
    const metadata = optionalMetadata(params);
    const signatureScheme = optionalEnum(params, "signature_scheme", SIGNATURE_SCHEMES) ?? "";
    return {
      tenant,
      url,
      enabledEvents,
      status: statusToProto(status),
      ...(description !== undefined ? { description } : {}),
      metadata: metadata?.entries ?? [],
      signatureScheme,
    };
  },
  reply: ({ webhookEndpoint }) => webhookEndpoint,
});
