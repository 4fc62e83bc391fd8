import { createHash } from "node:crypto";
import type { AttemptStatus, AttemptTrigger, EndpointDisabledReason } from "@rms/proto";
import { idAt, randomBase62 } from "../ids.js";
import type { StoredEvent } from "../events/model.js";
import { expiryAt, type Expiring } from "../storage/expiry.js";
import type { OutboxEvent } from "../storage/outbox.js";
import { QueueSignal } from "../storage/queue-signal.js";
import type { KeyScheme } from "../webhooks/secret.js";

/**
 * The stored shapes webhook delivery reads and writes (docs/webhooks.md, "Delivery"). The endpoints
 * kind owns `webhook_endpoints`; delivery reads a few of its fields and may disable an endpoint.
 */

export const WEBHOOK_ENDPOINTS_COLLECTION = "webhook_endpoints";
export const WEBHOOK_DELIVERIES_COLLECTION = "webhook_deliveries";
export const WEBHOOK_ATTEMPTS_COLLECTION = "webhook_attempts";

/** The deliveries queue's wake-up counter: the relay adds the deliveries its fan-out queued; idle workers read it. */
export const DELIVERY_QUEUE = new QueueSignal("webhook_queue", "deliveries");

/** What made an attempt (the webhooks vocabulary in @rms/proto). */
export type DeliveryTrigger = AttemptTrigger;

/** Attempts are kept 30 days (CONTRACT.md section 7), and so are finished deliveries, both from their creation. */
export const WEBHOOK_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** The `expires_at` of an attempt, or of a delivery once it has finished: WEBHOOK_RETENTION_MS after its `created` (Unix seconds). */
export function webhookExpiresAt(created: number): Date {
  return expiryAt(created * 1000, WEBHOOK_RETENTION_MS);
}

/**
 * A sealed signing key of an endpoint, newest first: a `whsec_` secret (`v1`) or a `whsk_` private key
 * (`v1a`, with its public key); `expires_at` (ms) ends a rotated-out key's grace period.
 */
export interface SealedSecret extends KeyScheme {
  sealed: string;
  expires_at: number | null;
}

/** The fields of an endpoint document delivery uses. */
export interface DeliveryEndpoint {
  _id: string;
  account: string;
  livemode: boolean;
  url: string;
  enabled_events: string[];
  status: "enabled" | "disabled";
  secrets: SealedSecret[];
  /** Time (ms) of the first failed attempt since the last success; null or absent while the latest succeeded (the 5-day rule). */
  failing_since?: number | null;
  disabled_reason?: string;
}

/**
 * The endpoint as its `webhook_endpoint.disabled` event shows it: the delivery fields and the rest of its
 * public fields (never a secret), with the version the versioned update matches on.
 */
export interface DisablingEndpoint extends DeliveryEndpoint {
  description: string | null;
  metadata: { k: string; v: string }[];
  created: number;
  version: number;
}

/**
 * The operational event delivery records in the endpoint's own outbox with the write that disables it
 * (CONTRACT.md section 7): `object` is the endpoint as disabled, `reason` why.
 */
export type EndpointDisabledEvent = OutboxEvent<"webhook_endpoint.disabled", Record<string, unknown>, never> & { reason: EndpointDisabledReason };

/** What an event document holds once fanned out: the endpoints that have not answered 2xx yet. */
export type FannedOutEvent = StoredEvent & { pending_endpoints?: string[] };

/**
 * One event to deliver to one endpoint: a queue item, claimed under a lease (storage/lease.ts). A scheduled
 * delivery that succeeds is deleted (its attempt records the success); only recovery deliveries are kept
 * as `succeeded`. The write that finishes a delivery (`failed`, or a kept `succeeded`) sets its
 * `expires_at`; a pending delivery has none and never expires.
 */
export interface DeliveryDocument extends Expiring {
  _id: string;
  account: string;
  livemode: boolean;
  event: string;
  endpoint: string;
  trigger: DeliveryTrigger;
  status: "pending" | "succeeded" | "failed";
  /** When the next attempt may be made (ms). */
  due_at: number;
  attempts: number;
  first_failed_at: number | null;
  /** Why it ended without a success (`endpoint_disabled`, `endpoint_deleted`, `schedule_exhausted`, ...); absent otherwise. */
  ended_reason?: string;
  lease_owner: string | null;
  lease_until: number | null;
  epoch: number;
  /** The epoch of the last claim that ended with a release; absent before the first. */
  released_epoch?: number;
  /** Unix seconds. */
  created: number;
}

/**
 * One attempt as recorded; the endpoints kind lists these (its public form drops the fields marked
 * internal). Recorded with its `expires_at` (webhookExpiresAt).
 */
export interface AttemptDocument extends Expiring {
  _id: string;
  account: string;
  livemode: boolean;
  event: string;
  endpoint: string;
  status: AttemptStatus;
  response_status: number | null;
  response_body: string | null;
  error: string | null;
  duration_ms: number;
  trigger: DeliveryTrigger;
  /** Unix seconds. */
  created: number;
  /** Internal: the delivery this attempt belongs to (null for a manual resend). */
  delivery: string | null;
  /** Internal: the receiver's 410 asked to disable the endpoint. */
  disable_endpoint: boolean;
  /** Internal: seconds from a 429/503 `Retry-After`. */
  retry_after: number | null;
}

/** A scheduled delivery's id: the same for the same event and endpoint, so a fan-out repeated after a crash inserts nothing new. */
export function scheduledDeliveryId(eventId: string, endpointId: string): string {
  return `${eventId}:${endpointId}`;
}

/**
 * A worker's attempt id: `wa_` with the attempt's due time and a digest of the delivery and the
 * attempt number, so the attempt of a delivery re-claimed after a crash has the same id (recorded once)
 * and attempts still sort by time.
 */
export function attemptIdOf(delivery: Pick<DeliveryDocument, "_id" | "due_at">, attemptNumber: number): string {
  const digest = createHash("sha256").update(`${delivery._id}#${attemptNumber}`).digest();
  return idAt("wa", delivery.due_at, digest);
}

/**
 * A recovery delivery (`POST /v1/webhook_endpoints/{id}/recover`): one attempt, due now, under a fresh id
 * (a scheduled delivery of the same event and endpoint already exists and has failed). The worker makes its
 * attempt; the recover call only inserts these.
 */
export function recoveryDelivery(event: { _id: string; account: string; livemode: boolean }, endpointId: string, nowMs: number = Date.now()): DeliveryDocument {
  return {
    _id: `${scheduledDeliveryId(event._id, endpointId)}:recovery:${randomBase62(12)}`,
    account: event.account,
    livemode: event.livemode,
    event: event._id,
    endpoint: endpointId,
    trigger: "recovery",
    status: "pending",
    due_at: nowMs,
    attempts: 0,
    first_failed_at: null,
    lease_owner: null,
    lease_until: null,
    epoch: 0,
    created: Math.floor(nowMs / 1000),
  };
}

/**
 * A resend's delivery (`POST /v1/events/{id}/resend`): one attempt, due now, in the endpoint's lane like any
 * other delivery (CONTRACT.md section 7), under a fresh id. Unlike the others, the worker makes its attempt
 * to a disabled endpoint too, and whether or not the endpoint still waits for the event (queue.ts).
 */
export function manualDelivery(event: { _id: string; account: string; livemode: boolean }, endpointId: string, nowMs: number = Date.now()): DeliveryDocument {
  return { ...recoveryDelivery(event, endpointId, nowMs), _id: `${scheduledDeliveryId(event._id, endpointId)}:manual:${randomBase62(12)}`, trigger: "manual" };
}
