import { WebhookEndpointStatus } from "../gen/rms/v1/webhook_endpoints_pb.js";
import { nameMap } from "./name-map.js";
import type { Vocabulary } from "./vocabulary.js";

/**
 * Webhook endpoints (CONTRACT.md section 7, in ../shared/docs/); their attempts and resends share the scope.
 * `webhook_endpoint.disabled` is operational: recorded when delivery disables an endpoint (a 410, or 5 days
 * of failed attempts), and delivered to the account's other endpoints that subscribe to it.
 */
export const WEBHOOK_ENDPOINTS_VOCABULARY = {
  domain: "webhook-endpoints",
  idPrefixes: ["we"],
  eventTypes: ["webhook_endpoint.disabled"],
  scopes: ["webhooks:write"],
} as const satisfies Vocabulary;

/** Webhook endpoint statuses as the API names them. */
export const WEBHOOK_ENDPOINT_STATUS = nameMap({ enabled: WebhookEndpointStatus.ENABLED, disabled: WebhookEndpointStatus.DISABLED });
export type WebhookEndpointStatusName = (typeof WEBHOOK_ENDPOINT_STATUS.names)[number];

/** Why delivery disabled an endpoint (`data.reason` of `webhook_endpoint.disabled`): a 410, or 5 days of failed attempts. */
export const ENDPOINT_DISABLED_REASONS = ["gone", "failing"] as const;
export type EndpointDisabledReason = (typeof ENDPOINT_DISABLED_REASONS)[number];

/** How an endpoint signs its deliveries: `v1` (HMAC-SHA256 with a `whsec_` secret) or `v1a` (Ed25519, `whpk_` public key). */
export const SIGNATURE_SCHEMES = ["v1", "v1a"] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/** A webhook endpoint's `description`: at most this many characters (Unicode code points). */
export const WEBHOOK_ENDPOINT_DESCRIPTION_MAX = 500;
