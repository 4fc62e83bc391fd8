import { isDuplicateKeyError } from "@rms/proto";
import type { Db, Filter } from "mongodb";
import type { Logger } from "pino";
import { newId } from "../ids.js";
import type { CoreSettings } from "../settings.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import type { EndpointConnections } from "../webhooks/connections.js";
import { deliver, type DeliveryOptions, type DeliveryOutcome } from "../webhooks/deliver.js";
import { eventBody } from "./event-body.js";
import {
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_ENDPOINTS_COLLECTION,
  webhookExpiresAt,
  type AttemptDocument,
  type DeliveryEndpoint,
  type DeliveryTrigger,
  type FannedOutEvent,
} from "./model.js";
import { disableEndpoint } from "./disable.js";
import { pullPendingEndpoint } from "./pending.js";
import { afterAttempt, type DisableReason } from "../webhooks/schedule.js";
import { decryptSecret, type Keyring } from "../webhooks/secret.js";

/** What an attempt needs besides the event and the endpoint: the database, the secret key and the network rules. */
export interface DeliveryEnvironment {
  readonly db: Db;
  /** Opens the endpoints' sealed secrets (RMS_SECRET_KEY); null when unset: every attempt then fails with `secret_unavailable`. */
  readonly keyring: Keyring | null;
  /** WEBHOOK_ALLOW_PRIVATE. */
  readonly allowPrivate: boolean;
  /** Tests: a certificate authority to trust, a resolver table, a shorter timeout, another address policy. */
  readonly transport?: Pick<DeliveryOptions, "ca" | "resolve" | "timeoutMs" | "policy">;
  readonly now?: () => number;
  readonly logger?: Logger;
  /** Tells the process's event relay of a write with an event (an endpoint disabled: disable.ts). */
  readonly written?: (collection: string, id: string) => void;
  /** Takes an endpoint out of an event's `pending_endpoints` (pending.ts); the worker's is grouped with others (bookkeeping.ts). */
  readonly pullPending?: (event: string, endpoint: string) => Promise<void>;
}

/** The environment from the settings core and the workers share (settings.ts). */
export function deliveryEnvironment(
  db: Db,
  settings: Pick<CoreSettings, "secretKeyring" | "webhookAllowPrivate">,
  logger?: Logger,
  written?: DeliveryEnvironment["written"],
): DeliveryEnvironment {
  return { db, keyring: settings.secretKeyring, allowPrivate: settings.webhookAllowPrivate, ...(logger ? { logger } : {}), ...(written ? { written } : {}) };
}

export interface AttemptRequest {
  readonly event: FannedOutEvent;
  readonly endpoint: DeliveryEndpoint;
  readonly trigger: DeliveryTrigger;
  /** The delivery this attempt belongs to; absent for a manual resend. */
  readonly delivery?: string;
  /** A fixed id (the worker's, per delivery and attempt number); a fresh `wa_` id when absent. */
  readonly attemptId?: string;
  /** The endpoint's keep-alive connections (webhooks/connections.ts); absent, the attempt opens one of its own. */
  readonly connections?: EndpointConnections;
}

export interface AppliedAttempt {
  /** The attempt as recorded (the first record, when this id had been recorded before). */
  readonly attempt: AttemptDocument;
  /** The endpoint was disabled by this attempt, and why. */
  readonly disabled: DisableReason | null;
}

/** Error of an attempt that could not sign: no valid secret could be opened (no RMS_SECRET_KEY, or a key that does not open it). */
export const SECRET_UNAVAILABLE = "secret_unavailable";

interface OpenedSecret {
  readonly secret: string;
  readonly expiresAt: number | null;
}

/**
 * Secrets opened, by keyring and by the endpoint document they were read from. A flight sends up to 32
 * deliveries with one read of its endpoint, and opening (an AES-GCM decipher per secret) costs about 5 % of a
 * worker's time when done per attempt. A new read of the endpoint (after a rotation, or a flight's re-read) is a
 * new document, opened afresh; weak keys let each go with its document.
 */
const openedByKeyring = new WeakMap<Keyring, WeakMap<DeliveryEndpoint, readonly OpenedSecret[]>>();

function openedSecretsOf(endpoint: DeliveryEndpoint, keyring: Keyring, nowMs: number, logger?: Logger): readonly OpenedSecret[] {
  let byEndpoint = openedByKeyring.get(keyring);
  if (!byEndpoint) {
    byEndpoint = new WeakMap();
    openedByKeyring.set(keyring, byEndpoint);
  }
  const cached = byEndpoint.get(endpoint);
  if (cached) return cached;
  const opened: OpenedSecret[] = [];
  for (const secret of endpoint.secrets ?? []) {
    // Past its grace period now, it is past it on every later call too.
    if (secret.expires_at !== null && secret.expires_at <= nowMs) continue;
    try {
      opened.push({ secret: decryptSecret(secret.sealed, keyring, endpoint._id), expiresAt: secret.expires_at });
    } catch (error) {
      logger?.error({ endpoint: endpoint._id, code: (error as { code?: string }).code }, "an endpoint secret does not open");
    }
  }
  byEndpoint.set(endpoint, opened);
  return opened;
}

/** The secrets an endpoint signs with now, newest first: every one not past its grace period that opens. */
export function openSecrets(endpoint: DeliveryEndpoint, keyring: Keyring | null, nowMs: number, logger?: Logger): string[] {
  if (!keyring) return [];
  return openedSecretsOf(endpoint, keyring, nowMs, logger)
    .filter(({ expiresAt }) => expiresAt === null || expiresAt > nowMs)
    .map(({ secret }) => secret);
}

/**
 * One attempt of one event to one endpoint, recorded and applied: the POST (deliver.ts), the attempt
 * document (inserted by id, so a repeat of the same id records nothing new), then its effects: a 2xx
 * takes the endpoint out of the event's `pending_endpoints` and ends the endpoint's failure streak; a
 * failure starts or continues the streak and disables the endpoint on a 410 or after 5 days of failing.
 * Retrying the delivery is the caller's (the worker's) business; a manual resend retries nothing.
 */
export async function attemptDelivery(env: DeliveryEnvironment, request: AttemptRequest): Promise<AppliedAttempt> {
  const attempt = await performAttempt(env, request);
  const recorded = await recordAttempt(env.db, attempt);
  const disabled = await applyAttempt(env, recorded, request.endpoint);
  return { attempt: recorded, disabled };
}

/** The POST itself, as an attempt document not yet stored. */
export async function performAttempt(env: DeliveryEnvironment, request: AttemptRequest): Promise<AttemptDocument> {
  const now = env.now ?? Date.now;
  const { event, endpoint } = request;
  const secrets = openSecrets(endpoint, env.keyring, now(), env.logger);
  const outcome: DeliveryOutcome | null =
    secrets.length === 0
      ? null
      : await deliver(
          { url: endpoint.url, eventId: event._id, body: eventBody(event), secrets },
          { allowPrivate: env.allowPrivate, now, ...env.transport, ...(request.connections ? { connections: request.connections } : {}) },
        );
  return {
    _id: request.attemptId ?? newId("wa", now()),
    account: endpoint.account,
    livemode: endpoint.livemode,
    event: event._id,
    endpoint: endpoint._id,
    status: outcome?.status ?? "failed",
    response_status: outcome?.responseStatus ?? null,
    response_body: outcome?.responseBody ?? null,
    error: outcome ? outcome.error : SECRET_UNAVAILABLE,
    duration_ms: outcome?.durationMs ?? 0,
    trigger: request.trigger,
    created: Math.floor(now() / 1000),
    delivery: request.delivery ?? null,
    disable_endpoint: outcome?.disableEndpoint ?? false,
    retry_after: outcome?.retryAfterSeconds ?? null,
  };
}

/** Stores the attempt by its id; when that id is already stored (a repeat after a crash) the stored one stands and is returned. */
export async function recordAttempt(db: Db, attempt: AttemptDocument): Promise<AttemptDocument> {
  const attempts = db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION);
  // Kept 30 days: the TTL index of the attempts removes it then (queue.ts, ensureDeliveryIndexes).
  const recorded: AttemptDocument = { ...attempt, expires_at: webhookExpiresAt(attempt.created) };
  try {
    await attempts.insertOne(recorded);
    return recorded;
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
    return (await attempts.findOne({ _id: attempt._id })) ?? attempt;
  }
}

/**
 * The effects of a recorded attempt, each idempotent so that applying the same attempt again (after a
 * crash) changes nothing more: `$pull` of the endpoint from the event, the failure streak set only
 * when not yet set, the endpoint disabled only while enabled. Returns why the endpoint was disabled.
 */
export async function applyAttempt(env: DeliveryEnvironment, attempt: AttemptDocument, endpoint: DeliveryEndpoint): Promise<DisableReason | null> {
  const now = env.now ?? Date.now;
  const endpoints = env.db.collection<DeliveryEndpoint>(WEBHOOK_ENDPOINTS_COLLECTION);
  if (attempt.status === "succeeded") {
    if (env.pullPending) await env.pullPending(attempt.event, attempt.endpoint);
    else await pullPendingEndpoint(env.db.collection<FannedOutEvent>(EVENTS_COLLECTION), attempt.event, attempt.endpoint);
    if (endpoint.failing_since != null) {
      await endpoints.updateOne({ _id: endpoint._id, failing_since: { $ne: null } } as Filter<DeliveryEndpoint>, { $set: { failing_since: null } });
    }
    return null;
  }
  const atMs = now();
  const { streak, disable } = afterAttempt(
    { failingSinceMs: endpoint.failing_since ?? null },
    { succeeded: false, disableEndpoint: attempt.disable_endpoint, atMs },
  );
  // Only the first failure of a streak sets its start; a concurrent attempt does not move it later.
  if (endpoint.failing_since == null)
    await endpoints.updateOne({ _id: endpoint._id, failing_since: null } as Filter<DeliveryEndpoint>, { $set: { failing_since: streak.failingSinceMs } });
  if (!disable) return null;
  // One versioned write disables it and records its `webhook_endpoint.disabled` event (disable.ts): exactly
  // one per disabling, however many attempts disable it at once. The streak ends with the disable, so an
  // operator's re-enable starts a fresh 5 days.
  const disabled = await disableEndpoint(env.db, endpoint, disable, atMs, env.written);
  if (disabled) env.logger?.warn({ endpoint: endpoint._id, reason: disable }, "webhook endpoint disabled");
  return disabled ? disable : null;
}
