import { verify as cryptoVerify } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../ids.js";
import { newEvent } from "../storage/outbox.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { newTenant, thingsCollection } from "../testutil/storage.js";
import { startReceiver, testCertificate, type Receiver, type ReceivedDelivery } from "../testutil/webhook-receiver.js";
import { insertEndpoint, testKeyring } from "../testutil/webhooks.js";
import { attemptDelivery, openSecrets, SECRET_UNAVAILABLE, type DeliveryEnvironment } from "./attempt.js";
import { eventBody } from "./event-body.js";
import { WEBHOOK_ATTEMPTS_COLLECTION, WEBHOOK_ENDPOINTS_COLLECTION, type AttemptDocument, type DeliveryEndpoint, type FannedOutEvent } from "./model.js";
import { DISABLE_AFTER_FAILING_MS } from "../webhooks/schedule.js";
import { encryptSecret } from "../webhooks/secret.js";
import { newEndpointKeyPair, newEndpointSecret, verifyingKeyOf } from "@rms/webhook-signing";

let t: Awaited<ReturnType<typeof thingsCollection>>;
let https: Receiver;
let gone: Receiver;
let tlsCa: string;
const keyring = testKeyring();
let env: DeliveryEnvironment;

beforeAll(async () => {
  t = await thingsCollection();
  const certificate = await testCertificate({ ip: ["127.0.0.1"], dns: ["localhost"] });
  tlsCa = certificate.cert;
  https = await startReceiver({ tls: certificate });
  gone = await startReceiver({ handler: (_request, response) => response.writeHead(410).end("gone") });
  env = { db: t.db, keyring, allowPrivate: true, transport: { ca: tlsCa } };
});
afterAll(async () => {
  await https?.close();
  await gone?.close();
  await t?.close();
});

const verify = (secret: string, delivery: ReceivedDelivery) => new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>);
const endpointNow = (id: string) => t.db.collection<DeliveryEndpoint>(WEBHOOK_ENDPOINTS_COLLECTION).findOne({ _id: id });

/** An event as the relay stored it, waiting for the given endpoints. */
async function storedEvent(tenant: ReturnType<typeof newTenant>, pending: string[]): Promise<FannedOutEvent> {
  const event: FannedOutEvent = {
    ...newEvent("resource.created", tenant, { id: newId("res"), name: "x", metadata: [{ k: "a", v: "1" }] }, { requestId: "req_1", idempotencyKey: null }),
    pending_endpoints: pending,
    ...(pending.length > 0 ? { undelivered: true as const } : {}),
  };
  await t.db.collection<FannedOutEvent>(EVENTS_COLLECTION).insertOne(event);
  return event;
}

describe("attemptDelivery", () => {
  it(
    "delivers over HTTPS a body the Standard Webhooks library verifies, records " + "the attempt, and takes the endpoint out of the event's pending ones",
    async () => {
      const tenant = newTenant();
      const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: https.url("/in", "localhost") });
      const other = "we_other";
      const event = await storedEvent(tenant, [endpoint.doc._id, other]);
      const before = https.deliveries.length;

      const { attempt, disabled } = await attemptDelivery(env, { event, endpoint: endpoint.doc, trigger: "manual" });

      expect(disabled).toBeNull();
      expect(attempt).toMatchObject({
        status: "succeeded",
        response_status: 200,
        response_body: "ok",
        error: null,
        trigger: "manual",
        event: event._id,
        endpoint: endpoint.doc._id,
      });
      const delivery = https.deliveries[before]!;
      const verified = verify(endpoint.secrets[0]!, delivery) as Record<string, unknown>;
      expect(verified).toEqual(JSON.parse(eventBody(event)));
      expect(verified).toMatchObject({
        id: event._id,
        object: "event",
        api_version: "1.4",
        pending_webhooks: 2,
        data: { object: { object: "resource", metadata: { a: "1" } } },
      });
      expect(await t.db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION).findOne({ _id: attempt._id })).toMatchObject({ status: "succeeded" });
      expect((await t.db.collection<FannedOutEvent>(EVENTS_COLLECTION).findOne({ _id: event._id }))!.pending_endpoints).toEqual([other]);
      // Another endpoint still waits: the flag stays.
      expect(await t.db.collection<FannedOutEvent>(EVENTS_COLLECTION).findOne({ _id: event._id })).toMatchObject({ undelivered: true });
    },
  );

  it("the same attempt id is recorded once", async () => {
    const tenant = newTenant();
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: https.url("/in", "localhost") });
    const event = await storedEvent(tenant, [endpoint.doc._id]);
    const attemptId = newId("wa");
    await attemptDelivery(env, { event, endpoint: endpoint.doc, trigger: "scheduled", attemptId });
    await attemptDelivery(env, { event, endpoint: endpoint.doc, trigger: "scheduled", attemptId });
    expect(await t.db.collection(WEBHOOK_ATTEMPTS_COLLECTION).countDocuments({ event: event._id })).toBe(1);
  });

  it("during a rotation's grace period both secrets verify; after it only the new one does", async () => {
    const tenant = newTenant();
    const [newer, older] = [newEndpointSecret(), newEndpointSecret()];
    const grace = await insertEndpoint(t.db, keyring, tenant, {
      url: https.url("/in", "localhost"),
      secrets: [
        { secret: newer, expires_at: null },
        { secret: older, expires_at: Date.now() + 3_600_000 },
      ],
    });
    const event = await storedEvent(tenant, [grace.doc._id]);
    let at = https.deliveries.length;
    await attemptDelivery(env, { event, endpoint: grace.doc, trigger: "manual" });
    expect(verify(newer, https.deliveries[at]!)).toBeTruthy();
    expect(verify(older, https.deliveries[at]!)).toBeTruthy();

    const after = await insertEndpoint(t.db, keyring, tenant, {
      url: https.url("/in", "localhost"),
      secrets: [
        { secret: newer, expires_at: null },
        { secret: older, expires_at: Date.now() - 1 },
      ],
    });
    at = https.deliveries.length;
    await attemptDelivery(env, { event, endpoint: after.doc, trigger: "manual" });
    expect(verify(newer, https.deliveries[at]!)).toBeTruthy();
    expect(() => verify(older, https.deliveries[at]!)).toThrow(/No matching signature/);
  });

  it("signs a v1a endpoint's delivery with Ed25519: node:crypto verifies it with the public key alone; during a move from v1 both schemes sign", async () => {
    const tenant = newTenant();
    const pair = newEndpointKeyPair();
    const older = newEndpointSecret();
    const moving = await insertEndpoint(t.db, keyring, tenant, {
      url: https.url("/in", "localhost"),
      secrets: [
        { secret: pair.privateKey, expires_at: null },
        { secret: older, expires_at: Date.now() + 3_600_000 },
      ],
    });
    const event = await storedEvent(tenant, [moving.doc._id]);
    const at = https.deliveries.length;
    const { attempt } = await attemptDelivery(env, { event, endpoint: moving.doc, trigger: "manual" });
    expect(attempt.status).toBe("succeeded");
    const delivery = https.deliveries[at]!;
    const [v1a, v1, ...rest] = String(delivery.headers["webhook-signature"]).split(" ");
    expect(rest).toEqual([]);
    expect(v1a).toMatch(/^v1a,/);
    const signed = Buffer.from(`${delivery.headers["webhook-id"]}.${delivery.headers["webhook-timestamp"]}.${delivery.body}`);
    expect(cryptoVerify(null, signed, verifyingKeyOf(pair.publicKey), Buffer.from(v1a!.slice(4), "base64"))).toBe(true);
    expect(delivery.headers["webhook-id"]).toBe(event._id);
    expect(JSON.parse(delivery.body)).toEqual(JSON.parse(eventBody(event)));
    // The outgoing v1 secret still verifies with the Standard Webhooks library during the grace period.
    expect(v1).toMatch(/^v1,/);
    expect(verify(older, delivery)).toBeTruthy();
  });

  it("a 410 disables the endpoint at once (`gone`), ending its failure streak (a re-enable starts afresh); the event stays pending", async () => {
    const tenant = newTenant();
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: gone.url() });
    const event = await storedEvent(tenant, [endpoint.doc._id]);
    const { attempt, disabled } = await attemptDelivery(env, { event, endpoint: endpoint.doc, trigger: "scheduled" });
    expect(attempt).toMatchObject({ status: "failed", response_status: 410, error: "http_error", disable_endpoint: true });
    expect(disabled).toBe("gone");
    expect(await endpointNow(endpoint.doc._id)).toMatchObject({ status: "disabled", disabled_reason: "gone" });
    expect((await endpointNow(endpoint.doc._id))!.failing_since).toBeNull();
    expect((await t.db.collection<FannedOutEvent>(EVENTS_COLLECTION).findOne({ _id: event._id }))!.pending_endpoints).toEqual([endpoint.doc._id]);
  });

  it("a failure after 5 days of failing disables the endpoint (`failing`); a success ends the streak", async () => {
    const tenant = newTenant();
    const refused = await startReceiver();
    const deadUrl = refused.url();
    await refused.close();
    const endpoints = t.db.collection<DeliveryEndpoint>(WEBHOOK_ENDPOINTS_COLLECTION);

    const young = await insertEndpoint(t.db, keyring, tenant, { url: deadUrl });
    await endpoints.updateOne({ _id: young.doc._id }, { $set: { failing_since: Date.now() - DISABLE_AFTER_FAILING_MS + 60_000 } });
    const event = await storedEvent(tenant, [young.doc._id]);
    const first = await attemptDelivery(env, { event, endpoint: (await endpointNow(young.doc._id))!, trigger: "scheduled" });
    expect(first.attempt.error).toBe("connection_failed");
    expect(first.disabled).toBeNull();
    expect((await endpointNow(young.doc._id))!.status).toBe("enabled");

    const old = await insertEndpoint(t.db, keyring, tenant, { url: deadUrl });
    await endpoints.updateOne({ _id: old.doc._id }, { $set: { failing_since: Date.now() - DISABLE_AFTER_FAILING_MS - 1 } });
    const second = await attemptDelivery(env, { event, endpoint: (await endpointNow(old.doc._id))!, trigger: "scheduled" });
    expect(second.disabled).toBe("failing");
    expect(await endpointNow(old.doc._id)).toMatchObject({ status: "disabled", disabled_reason: "failing" });

    const healed = await insertEndpoint(t.db, keyring, tenant, { url: https.url("/in", "localhost") });
    await endpoints.updateOne({ _id: healed.doc._id }, { $set: { failing_since: Date.now() - 1000 } });
    await attemptDelivery(env, { event, endpoint: (await endpointNow(healed.doc._id))!, trigger: "scheduled" });
    expect((await endpointNow(healed.doc._id))!.failing_since).toBeNull();
  });

  it("without a secret key no request is made: the attempt fails with secret_unavailable", async () => {
    const tenant = newTenant();
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: https.url("/in", "localhost") });
    const event = await storedEvent(tenant, [endpoint.doc._id]);
    const before = https.deliveries.length;
    const { attempt } = await attemptDelivery({ ...env, keyring: null }, { event, endpoint: endpoint.doc, trigger: "manual" });
    expect(attempt).toMatchObject({ status: "failed", error: SECRET_UNAVAILABLE, response_status: null });
    expect(https.deliveries.length).toBe(before);
  });
});

describe("openSecrets", () => {
  it("opens a document's secrets once and still drops one past its grace period on a later call; a new read of the endpoint opens its own", async () => {
    const tenant = newTenant();
    const nowMs = Date.now();
    const [current, old] = [newEndpointSecret(), newEndpointSecret()];
    const endpoint = await insertEndpoint(t.db, keyring, tenant, {
      url: https.url("/in", "localhost"),
      secrets: [
        { secret: current, expires_at: null },
        { secret: old, expires_at: nowMs + 1_000 },
      ],
    });

    expect(openSecrets(endpoint.doc, keyring, nowMs)).toEqual([current, old]);
    // The same document a flight holds, after the old secret's grace period: the opened list is filtered again.
    expect(openSecrets(endpoint.doc, keyring, nowMs + 1_000)).toEqual([current]);
    expect(openSecrets(endpoint.doc, null, nowMs)).toEqual([]);

    // A rotation is a new read of the endpoint: the new document opens what it holds, not what the old one did.
    const rotated = newEndpointSecret();
    const reread: DeliveryEndpoint = { ...endpoint.doc, secrets: [{ sealed: encryptSecret(rotated, keyring, endpoint.doc._id), expires_at: null }] };
    expect(openSecrets(reread, keyring, nowMs)).toEqual([rotated]);
    expect(openSecrets(endpoint.doc, keyring, nowMs)).toEqual([current, old]);
  });
});
