import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  type SignatureScheme,
  WEBHOOK_ENDPOINT_STATUS,
  WebhookEndpointStatus,
  WebhookEndpointService,
  type ServiceImplementation,
  type WebhookAttemptSchema,
  type WebhookEndpointSchema,
  type GetWebhookEndpointDeliveryStatsResponseSchema,
} from "@rms/proto";
import type { Db } from "mongodb";
import type { Logger } from "pino";
import { errors } from "../errors.js";
import { defineRpcs, found, rpc, type PresentedKeyCheck } from "../grpc/define-rpc.js";
import { pageOf } from "../grpc/list-request.js";
import type { CoreSettings } from "../settings.js";
import { mergeMetadata, metadataUpdate } from "../metadata.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { decryptSecret, encryptSecret, newEndpointKeyPair, newEndpointSecret, signingSchemeOf, type Keyring } from "../webhooks/index.js";
import type { AttemptDocument, FannedOutEvent } from "../webhook-deliveries/model.js";
import { ENDPOINTS_PER_TENANT, type StoredSecret, type WebhookEndpointStatusName } from "./model.js";
import type { LoadedEndpoint, WebhookEndpointStore } from "./store.js";
import {
  attemptStatusOf,
  createdRangeOf,
  eventIdOf,
  signatureSchemeOf,
  sinceOf,
  validateDescription,
  validateEnabledEvents,
  validateExpiresIn,
  validateUrl,
} from "./validation.js";
import type { AttemptStore } from "./attempts.js";
import { scheduleResend } from "./resend.js";
import { scheduleRecovery } from "./recover.js";
import { deliveryStats, type DeliveryStats } from "./stats.js";
import { eventDeliveries } from "./event-deliveries.js";
import { wantsEvent } from "../webhook-deliveries/fanout.js";

/** What the endpoint rules need of core's settings: the sealing key, the SSRF switch and recover's cap. */
export type EndpointSettings = Pick<CoreSettings, "secretKeyring" | "webhookAllowPrivate"> & Partial<Pick<CoreSettings, "webhookRecoverMax">>;

function attemptMessage(doc: AttemptDocument): MessageInitShape<typeof WebhookAttemptSchema> {
  return {
    id: doc._id,
    eventId: doc.event,
    webhookEndpointId: doc.endpoint,
    status: doc.status,
    ...(doc.response_status !== null ? { responseStatus: doc.response_status } : {}),
    ...(doc.response_body !== null ? { responseBody: doc.response_body } : {}),
    // Stored as `error`; answered as `failure_code` (Stripe's name for a failure on an object).
    ...(doc.error !== null ? { failureCode: doc.error } : {}),
    durationMs: BigInt(Math.round(doc.duration_ms)),
    trigger: doc.trigger,
    created: BigInt(doc.created),
    livemode: doc.livemode,
  };
}

/** The statistics as the RPC answers them. */
function statsMessage(endpointId: string, stats: DeliveryStats): MessageInitShape<typeof GetWebhookEndpointDeliveryStatsResponseSchema> {
  return {
    webhookEndpointId: endpointId,
    asOf: BigInt(stats.asOf),
    lastHour: stats.lastHour,
    lastDay: stats.lastDay,
    failureStreak: stats.failureStreak,
    failureStreakCapped: stats.failureStreakCapped,
    ...(stats.failingSince !== null ? { failingSince: BigInt(stats.failingSince) } : {}),
    ...(stats.lastFailure ? { lastFailure: attemptMessage(stats.lastFailure) } : {}),
    ...(stats.lastSuccessAt !== null ? { lastSuccessAt: BigInt(stats.lastSuccessAt) } : {}),
    pending: stats.pending,
    pendingCapped: stats.pendingCapped,
    ...(stats.nextAttemptAt !== null ? { nextAttemptAt: BigInt(stats.nextAttemptAt) } : {}),
    buckets: stats.buckets.map((b) => ({ ...b, start: BigInt(b.start) })),
    attemptsCapped: stats.attemptsCapped,
    ...(stats.countedFrom !== null ? { countedFrom: BigInt(stats.countedFrom) } : {}),
  };
}

/** UNSPECIFIED means "not given"; any other unknown number is invalid. */
function statusName(value: WebhookEndpointStatus): WebhookEndpointStatusName | undefined {
  if (value === WebhookEndpointStatus.UNSPECIFIED) return undefined;
  const name = WEBHOOK_ENDPOINT_STATUS.nameOf(value);
  if (!name) throw errors.invalid("parameter_invalid", "Invalid status: must be one of enabled or disabled.", "status");
  return name;
}

/**
 * The endpoint as every answer shows it: its scheme and, for `v1a`, its public key (never a private key);
 * `secret` is the clear `v1` secret of a create or rotate answer only.
 */
function toMessage(doc: LoadedEndpoint, secret?: string): MessageInitShape<typeof WebhookEndpointSchema> {
  const { signature_scheme, public_key } = signingSchemeOf(doc.secrets[0]);
  return {
    id: doc._id,
    url: doc.url,
    enabledEvents: doc.enabled_events,
    status: WEBHOOK_ENDPOINT_STATUS.valueOf(doc.status),
    ...(doc.description !== null ? { description: doc.description } : {}),
    metadata: doc.metadata.map((p) => ({ key: p.k, value: p.v })),
    created: BigInt(doc.created),
    livemode: doc.livemode,
    ...(secret !== undefined ? { secret } : {}),
    signatureScheme: signature_scheme,
    ...(public_key !== null ? { publicKey: public_key } : {}),
  };
}

/**
 * A new signing key of `scheme`, sealed for the endpoint `id` (its sealing context), and what the answer
 * shows of it: a `v1` secret in clear (shown once), or nothing for `v1a` (its public key is stored with it and
 * shown by every answer; the private key never leaves core).
 */
function newKey(scheme: SignatureScheme, ring: Keyring, id: string): { stored: StoredSecret; secret?: string } {
  if (scheme === "v1a") {
    const pair = newEndpointKeyPair();
    return { stored: { sealed: encryptSecret(pair.privateKey, ring, id), expires_at: null, scheme: "v1a", public_key: pair.publicKey } };
  }
  const secret = newEndpointSecret();
  return { stored: { sealed: encryptSecret(secret, ring, id), expires_at: null }, secret };
}

/**
 * The WebhookEndpointService RPCs: domain validation, the presented key, then the store. Secrets exist
 * in clear only in this call's memory and its answer (create, rotate); they are never logged.
 */
export interface EndpointServiceDeps {
  readonly store: WebhookEndpointStore;
  readonly attempts: AttemptStore;
  readonly db: Db;
  readonly settings: EndpointSettings;
  readonly checkKey: PresentedKeyCheck;
  readonly logger: Logger;
  /** Tells the relay of a write with an event (a resend's 410 disables the endpoint). */
  readonly written?: (collection: string, id: string) => void;
  /** Relays an endpoint's pending event before a delete (DomainContext.relayNow). */
  readonly relayNow?: (collection: string, id: string) => Promise<void>;
}

export function webhookEndpointService(deps: EndpointServiceDeps): ServiceImplementation<typeof WebhookEndpointService> {
  const { store, settings, checkKey, logger } = deps;
  const keyring = (): Keyring => {
    if (settings.secretKeyring) return settings.secretKeyring;
    logger.error("RMS_SECRET_KEY is not configured: webhook endpoint secrets cannot be sealed");
    throw errors.of("internal_error");
  };

  return defineRpcs(WebhookEndpointService, checkKey, {
    createWebhookEndpoint: rpc.write({
      idempotency: "sealed",
      // Under a key, the endpoint's insert commits with the record of its (sealed) answer.
      atomic: true,
      parse: (request) => ({
        fields: {
          url: validateUrl(request.url, settings.webhookAllowPrivate),
          enabled_events: validateEnabledEvents(request.enabledEvents),
          status: statusName(request.status) ?? "enabled",
          description: request.description === undefined ? null : validateDescription(request.description),
          metadata: mergeMetadata([], request.metadata),
        },
        scheme: signatureSchemeOf(request.signatureScheme) ?? "v1",
        ring: keyring(),
      }),
      async write({ fields, scheme, ring }, { tenant, info, budget }) {
        let secret: string | undefined;
        const seal = (id: string) => {
          const made = newKey(scheme, ring, id);
          secret = made.secret;
          return made.stored;
        };
        return { ...(await store.create(tenant, fields, seal, info, budget)), secret };
      },
      reply(created, { ring }) {
        if ("limitReached" in created) {
          throw errors.invalid("limit_exceeded", `An account can have at most ${ENDPOINTS_PER_TENANT} webhook endpoints in each mode; delete one first.`);
        }
        const { doc, replayed, secret } = created;
        // An endpoint a 1.4.0 core made under the key without recording its answer (storage/key-slot.ts) shows its
        // current secret: the caller never saw one. A `v1a` endpoint's answer shows its public key, and no secret.
        const newest = doc.secrets[0]!;
        const shown = replayed ? (newest.scheme === "v1a" ? undefined : decryptSecret(newest.sealed, ring, doc._id)) : secret;
        return { webhookEndpoint: toMessage(doc, shown) };
      },
    }),

    getWebhookEndpoint: rpc.read({
      load: ({ id }, { tenant, budget }) => store.get(tenant, id, budget),
      reply: (doc, { id }) => ({ webhookEndpoint: toMessage(found(doc, "webhook endpoint", id)) }),
    }),

    updateWebhookEndpoint: rpc.write({
      parse: (request) => {
        const url = request.url === undefined ? undefined : validateUrl(request.url, settings.webhookAllowPrivate);
        const enabledEvents = request.enabledEvents ? validateEnabledEvents(request.enabledEvents.types) : undefined;
        const status = statusName(request.status);
        const description = request.description === undefined ? undefined : validateDescription(request.description);
        const metadata = metadataUpdate(request.metadata, request.clearMetadata);
        const change = {
          ...(url !== undefined ? { url } : {}),
          ...(enabledEvents !== undefined ? { enabled_events: enabledEvents } : {}),
          ...(status !== undefined ? { status } : {}),
          ...(description !== undefined ? { description } : {}),
          ...(metadata ? { metadata } : {}),
        };
        return { id: request.id, change };
      },
      write: ({ id, change }, { tenant, budget }) => store.update(tenant, id, change, budget),
      reply: (doc, { id }) => ({ webhookEndpoint: toMessage(found(doc, "webhook endpoint", id)) }),
    }),

    deleteWebhookEndpoint: rpc.write({
      write: ({ id }, { tenant, budget }) => store.delete(tenant, id, budget, deps.relayNow),
      reply: (doc, { id }) => ({ id: found(doc, "webhook endpoint", id)._id }),
    }),

    listWebhookEndpoints: rpc.read({
      parse: (request) => pageOf(request, "we", "webhook endpoint"),
      load: (paging, { tenant, budget }) => store.list(tenant, paging, budget),
      reply: (page) => ({ webhookEndpoints: page.items.map((doc) => toMessage(doc)), hasMore: page.hasMore }),
    }),

    listWebhookAttempts: rpc.read({
      parse: (request) => {
        const paging = pageOf(request, "wa", "webhook attempt");
        const event = request.eventId === "" ? undefined : eventIdOf(request.eventId, "event");
        const status = attemptStatusOf(request.status);
        const created = createdRangeOf(request.created);
        return { endpointId: request.webhookEndpointId, query: { ...paging, ...(event ? { event } : {}), ...(status ? { status } : {}), created } };
      },
      load: ({ endpointId }, { tenant, budget }) => store.get(tenant, endpointId, budget),
      async reply(doc, { endpointId, query }, { tenant, budget }) {
        const endpoint = found(doc, "webhook endpoint", endpointId);
        const page = await deps.attempts.list(tenant, endpoint._id, query, budget);
        return { webhookAttempts: page.items.map(attemptMessage), hasMore: page.hasMore, webhookEndpointId: endpoint._id };
      },
    }),

    recoverWebhookEndpoint: rpc.write({
      parse: (request) => ({ id: request.id, since: sinceOf(request.since) }),
      async write({ id, since }, { tenant, budget }) {
        const endpoint = found(await store.get(tenant, id, budget), "webhook endpoint", id);
        // Workers end every delivery to a disabled endpoint without an attempt: recovering one would do nothing.
        if (endpoint.status !== "enabled")
          throw errors.conflict("state_conflict", "This webhook endpoint is disabled; enable it before recovering its events.");
        return scheduleRecovery(deps.db, tenant, endpoint._id, since, { budget, ...(settings.webhookRecoverMax ? { max: settings.webhookRecoverMax } : {}) });
      },
      reply: ({ scheduled, hasMore }) => ({ scheduled, hasMore }),
    }),

    resendEvent: rpc.write({
      parse: (request) => {
        if (request.webhookEndpointId === "") throw errors.invalid("parameter_missing", "Missing required param: webhook_endpoint.", "webhook_endpoint");
        return request;
      },
      async write({ eventId, webhookEndpointId }, { tenant, budget }) {
        // A path id: anything that names no event of the caller is not found, as on GET /v1/events/{id}.
        const [endpoint, event] = await Promise.all([
          store.get(tenant, webhookEndpointId, budget),
          deps.db.collection<FannedOutEvent>(EVENTS_COLLECTION).findOne({ _id: eventId }, budget.db()),
        ]);
        if (!event || event.account !== tenant.account || event.livemode !== tenant.livemode) throw errors.notFound("event", eventId);
        const target = found(endpoint, "webhook endpoint", webhookEndpointId, "webhook_endpoint");
        // A resend delivers what the endpoint asked for: an event of a type it does not subscribe to is refused.
        if (!wantsEvent(target.enabled_events, event.type)) {
          throw errors.invalid(
            "parameter_invalid",
            `Invalid webhook_endpoint: ${target._id} is not subscribed to ${event.type} events (its enabled_events: ${target.enabled_events.join(", ")}).`,
            "webhook_endpoint",
          );
        }
        // One attempt, recorded like any other (trigger "manual"), made by a worker in the endpoint's lane
        // (resend.ts); it retries nothing, and a disabled endpoint may be tried too (its status does not change on success).
        return scheduleResend(deps.db, tenant, event._id, target._id, { budget });
      },
      reply: (attempt) => ({ webhookAttempt: attemptMessage(attempt) }),
    }),

    listEventDeliveries: rpc.read({
      load: ({ eventId }, { budget }) => deps.db.collection<FannedOutEvent>(EVENTS_COLLECTION).findOne({ _id: eventId }, budget.db()),
      async reply(event, { eventId }, { tenant, budget }) {
        // A path id: anything that names no event of the caller is not found, as on GET /v1/events/{id}.
        if (!event || event.account !== tenant.account || event.livemode !== tenant.livemode) throw errors.notFound("event", eventId);
        const deliveries = await eventDeliveries(deps.db, store, tenant, event, budget);
        return {
          eventId: event._id,
          deliveries: deliveries.map((d) => ({
            webhookEndpointId: d.endpoint,
            status: d.status,
            attempts: d.attempts,
            ...(d.nextAttemptAt !== null ? { nextAttemptAt: BigInt(Math.floor(d.nextAttemptAt / 1000)) } : {}),
            ...(d.endedReason !== null ? { endedReason: d.endedReason } : {}),
            subscribed: d.subscribed,
          })),
        };
      },
    }),

    getWebhookEndpointDeliveryStats: rpc.read({
      load: ({ id }, { tenant, budget }) => store.get(tenant, id, budget),
      async reply(doc, { id }, { budget }) {
        const endpoint = found(doc, "webhook endpoint", id);
        return statsMessage(endpoint._id, await deliveryStats(deps.db, endpoint, Date.now(), budget));
      },
    }),

    rotateWebhookEndpointSecret: rpc.write({
      idempotency: "sealed",
      parse: (request) => ({
        id: request.id,
        graceS: validateExpiresIn(request.expiresIn),
        scheme: signatureSchemeOf(request.signatureScheme),
        ring: keyring(),
      }),
      async write({ id, graceS, scheme, ring }, { tenant, budget }) {
        // Without a scheme the new key is of the endpoint's current one; with one, the endpoint moves to it.
        let secret: string | undefined;
        const next = (newest: StoredSecret | undefined) => {
          const made = newKey(scheme ?? signingSchemeOf(newest).signature_scheme, ring, id);
          secret = made.secret;
          return made.stored;
        };
        const doc = await store.rotate(tenant, id, next, graceS, budget);
        return { doc, secret };
      },
      reply: ({ doc, secret }, { id }) => ({ webhookEndpoint: toMessage(found(doc, "webhook endpoint", id), secret) }),
    }),
  });
}
