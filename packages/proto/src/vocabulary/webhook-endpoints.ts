import { WebhookEndpointStatus } from "../gen/rms/v1/webhook_endpoints_pb.js";
import { nameMap } from "./name-map.js";
import type { Vocabulary } from "./vocabulary.js";

/** Webhook endpoints (CONTRACT.md section 7, in ../shared/docs/); their attempts and resends share the scope. */
export const WEBHOOK_ENDPOINTS_VOCABULARY = {
  domain: "webhook-endpoints",
  idPrefixes: ["we"],
  eventTypes: [],
  scopes: ["webhooks:write"],
} as const satisfies Vocabulary;

/** Webhook endpoint statuses as the API names them. */
export const WEBHOOK_ENDPOINT_STATUS = nameMap({ enabled: WebhookEndpointStatus.ENABLED, disabled: WebhookEndpointStatus.DISABLED });
export type WebhookEndpointStatusName = (typeof WEBHOOK_ENDPOINT_STATUS.names)[number];
