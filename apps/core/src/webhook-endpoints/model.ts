import { WEBHOOK_ENDPOINT_DESCRIPTION_MAX } from "@rms/proto";
import type { WebhookEndpointStatusName } from "@rms/proto";
import type { MetadataPair } from "../metadata.js";
import type { TenantDocument } from "../storage/documents.js";
import type { KeySlot } from "../storage/key-slot.js";
import type { EndpointDisabledEvent } from "../webhook-deliveries/model.js";
import type { KeyScheme } from "../webhooks/secret.js";

export type { WebhookEndpointStatusName };

/** At most this many endpoints per account and mode (CONTRACT.md section 7, in ../shared/docs/): slots 0 to 15. */
export const ENDPOINTS_PER_TENANT = 16;

/** The event types an endpoint may subscribe to, besides `*` (every type): the domains' vocabularies in @rms/proto. */
export { EVENT_TYPES } from "@rms/proto";
export const ALL_EVENTS = "*";

/** Longest description, in Unicode code points. */
export const DESCRIPTION_MAX = WEBHOOK_ENDPOINT_DESCRIPTION_MAX;

/** Default, and largest, grace period of a rotated secret, in seconds. */
export const ROTATION_GRACE_DEFAULT_S = 86_400;
export const ROTATION_GRACE_MAX_S = 604_800;
/** Secrets kept per endpoint (the newest and up to four still in their grace period): each one signs every delivery. */
export const SECRETS_MAX = 5;

/**
 * One signing key, sealed (webhooks/secret.ts) with the endpoint id as context: a `whsec_` secret (`v1`), or a
 * `whsk_` Ed25519 private key (`scheme: "v1a"`, with its `whpk_` public key, which is not secret).
 */
export interface StoredSecret extends KeyScheme {
  sealed: string;
  /** Unix ms after which it stops signing; null for the current secret. */
  expires_at: number | null;
}

/**
 * The stored document of one endpoint (the shared data model of the delivery workers, which read `status`,
 * `url`, `enabled_events` and `secrets`, and may set `status: "disabled"` with `disabled_reason`). Its outbox
 * holds one kind of event: `webhook_endpoint.disabled`, pushed by the write of delivery that disables it
 * (webhook-deliveries/disable.ts); the API's own changes of an endpoint record none.
 */
export interface WebhookEndpointDocument extends TenantDocument<EndpointDisabledEvent>, KeySlot {
  _id: string;
  url: string;
  enabled_events: string[];
  status: WebhookEndpointStatusName;
  description: string | null;
  metadata: MetadataPair[];
  created: number;
  /** 0 to 15, unique per account and mode: the endpoint limit as a fact of a unique index, with no counter to drift. */
  slot: number;
  /** Newest first. */
  secrets: StoredSecret[];
  disabled_reason?: string | null;
}

/** How far back a recovery may reach, in seconds (14 days). */
export const RECOVER_MAX_AGE_S = 14 * 24 * 60 * 60;
