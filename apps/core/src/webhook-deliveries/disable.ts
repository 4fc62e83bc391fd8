import type { EndpointDisabledReason } from "@rms/proto";
import type { Db } from "mongodb";
import { newEvent } from "../storage/outbox.js";
import { updateVersioned } from "../storage/versioned-update.js";
import { signingSchemeOf } from "../webhooks/secret.js";
import { EVENT_API_VERSION } from "./event-body.js";
import { WEBHOOK_ENDPOINTS_COLLECTION, type DisablingEndpoint, type EndpointDisabledEvent } from "./model.js";

/** The stored endpoint as the versioned update reads and writes it, its outbox holding `webhook_endpoint.disabled`. */
type EndpointWithOutbox = DisablingEndpoint & { pending_events: EndpointDisabledEvent[] };

/**
 * The endpoint as `GET /v1/webhook_endpoints/{id}` shows it, in stored form (metadata as pairs, which the events
 * API turns into a map, with `object` after `id`): what its `webhook_endpoint.disabled` event records. Never a
 * secret: a `v1a` endpoint's public key only.
 */
export function endpointSnapshot(endpoint: DisablingEndpoint): Record<string, unknown> {
  return {
    id: endpoint._id,
    url: endpoint.url,
    enabled_events: endpoint.enabled_events,
    status: endpoint.status,
    description: endpoint.description,
    metadata: endpoint.metadata,
    livemode: endpoint.livemode,
    api_version: EVENT_API_VERSION,
    created: endpoint.created,
    ...signingSchemeOf(endpoint.secrets[0]),
  };
}

/**
 * Disables an enabled endpoint and records its `webhook_endpoint.disabled` event in the same single-document
 * write (the endpoint's outbox, ARCHITECTURE data rule 2): `status: disabled`, `disabled_reason`, the failure
 * streak cleared (a re-enable starts a fresh 5 days), the version moved on, and the event with that version as
 * its `sequence`. The write matches the version it read while the endpoint is still enabled, so of any number
 * of workers disabling one endpoint at once exactly one writes, and its event is the only one; the others read
 * it disabled and do nothing. True when this call disabled it. `written` tells the process's relay (the fast
 * path; the sweep finds it otherwise).
 */
export async function disableEndpoint(
  db: Db,
  endpoint: Pick<DisablingEndpoint, "_id" | "account" | "livemode">,
  reason: EndpointDisabledReason,
  atMs: number,
  written?: (collection: string, id: string) => void,
): Promise<boolean> {
  const endpoints = db.collection<EndpointWithOutbox>(WEBHOOK_ENDPOINTS_COLLECTION);
  const tenant = { account: endpoint.account, livemode: endpoint.livemode };
  const result = await updateVersioned(endpoints, tenant, endpoint._id, (current) => {
    if (current.status !== "enabled") return null;
    const after: DisablingEndpoint = { ...current, status: "disabled", disabled_reason: reason, failing_since: null };
    const event: EndpointDisabledEvent = {
      ...newEvent("webhook_endpoint.disabled", tenant, endpointSnapshot(after), { requestId: null, idempotencyKey: null }, null, atMs),
      reason,
    };
    return { set: { status: "disabled" as const, disabled_reason: reason, failing_since: null }, events: [event] };
  });
  const disabled = result !== null && result.before.status === "enabled" && result.after.status === "disabled";
  if (disabled) written?.(WEBHOOK_ENDPOINTS_COLLECTION, endpoint._id);
  return disabled;
}
