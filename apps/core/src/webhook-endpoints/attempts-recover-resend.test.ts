import { status as GrpcStatus } from "@grpc/grpc-js";
import { eventually } from "@rms/test-db/testkit";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../ids.js";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import { startReceiver, type Receiver } from "../testutil/webhook-receiver.js";
import { masterKey } from "../webhooks/index.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDocument, type FannedOutEvent } from "../webhook-deliveries/model.js";
import { pino } from "pino";
import { Registry } from "prom-client";
import { DEFAULT_SETTINGS, type CoreSettings } from "../settings.js";
import { deliveriesPoller } from "../worker/tasks/deliveries.js";

type Tenant = { accountId: string; livemode: boolean };

const keyring = { primary: masterKey(Buffer.alloc(32, 9)) };
const settings: CoreSettings = { ...DEFAULT_SETTINGS, secretKeyring: keyring, webhookAllowPrivate: true };
let t: TestCore;
let ok: Receiver;
let broken: Receiver;
let worker: ReturnType<typeof deliveriesPoller>;
beforeAll(async () => {
  // The relay runs, so a created resource's event reaches `events` (and is fanned out to the endpoints).
  t = await startTestCore({ relay: true, settings });
  ok = await startReceiver();
  broken = await startReceiver({ handler: (_req, res) => res.writeHead(500).end("receiver is down") });
});
afterAll(async () => {
  await Promise.all([ok?.close(), broken?.close()]);
  await t?.stop();
});

/** An endpoint subscribed to `enabledEvents`: by default a type these tests never emit, so only resends reach it. */
async function endpointAt(tenant: Tenant, url: string, enabledEvents = ["job.failed"]) {
  return (await t.webhookEndpoints.createWebhookEndpoint({ tenant, url, enabledEvents })).webhookEndpoint!;
}

/**
 * Subscribes an endpoint to resource.created once its events are fanned out (a resend must be of a type the endpoint
 * subscribes to; subscribing only now keeps the scheduled deliveries away from it, so only resends reach it).
 */
async function subscribeAfter(tenant: Tenant, endpointId: string) {
  await t.webhookEndpoints.updateWebhookEndpoint({ tenant, id: endpointId, enabledEvents: { types: ["resource.created"] } });
}

/** A resource created now, and its resource.created event once the relay has copied it. */
async function newEvent(tenant: Tenant) {
  const { resource } = await t.resources.createResource({ tenant, name: "to deliver" });
  return eventually(async () => {
    const { events } = await t.events.listEvents({ tenant, limit: 100 });
    const event = events.find((e) => e.dataJson.includes(resource!.id));
    expect(event).toBeDefined();
    return event!;
  });
}

describe("ResendEvent", () => {
  // Resends are made by the workers, in the endpoint's lane (resend.ts): one runs for these tests (not for
  // recover's below, which look at the deliveries they schedule before any worker takes them).
  beforeAll(() => {
    worker = deliveriesPoller(
      { db: t.db, logger: pino({ level: "silent" }), workerId: "resend-test", written: () => {}, settings, metrics: new Registry() },
      { pollMs: 50 },
    );
    worker.start();
  });
  afterAll(async () => {
    await worker?.stop();
  });

  it("makes one attempt now, signed so that the Standard Webhooks library verifies it, and answers the attempt", async () => {
    const { test: tenant } = await t.newAccount();
    const we = await endpointAt(tenant, ok.url("/resend"), ["*"]);
    const event = await newEvent(tenant);
    const before = ok.deliveries.length;
    const { webhookAttempt: attempt } = await t.webhookEndpoints.resendEvent({ tenant, eventId: event.id, webhookEndpointId: we.id });
    expect(attempt).toMatchObject({
      eventId: event.id,
      webhookEndpointId: we.id,
      status: "succeeded",
      responseStatus: 200,
      responseBody: "ok",
      trigger: "manual",
    });
    expect(attempt?.error).toBeUndefined();
    expect(attempt?.id).toMatch(/^wa_[0-9A-Za-z]{22}$/);
    const received = ok.deliveries.slice(before).find((d) => d.url === "/resend");
    expect(received).toBeDefined();
    const verified = new Webhook(we.secret!.slice("whsec_".length)).verify(received!.body, received!.headers as Record<string, string>);
    expect(verified).toMatchObject({ id: event.id, object: "event", type: "resource.created" });
    // The event no longer waits for this endpoint.
    expect((await t.events.getEvent({ tenant, id: event.id })).event?.pendingWebhooks).toBe(0);
  });

  it("records a failed attempt with the receiver's status and body; lists attempts newest first, filtered by event and status", async () => {
    const { test: tenant } = await t.newAccount();
    const we = await endpointAt(tenant, broken.url());
    const [first, second] = [await newEvent(tenant), await newEvent(tenant)];
    await subscribeAfter(tenant, we.id);
    const a1 = (await t.webhookEndpoints.resendEvent({ tenant, eventId: first.id, webhookEndpointId: we.id })).webhookAttempt!;
    expect(a1).toMatchObject({ status: "failed", responseStatus: 500, responseBody: "receiver is down", failureCode: "http_error", trigger: "manual" });
    await t.webhookEndpoints.updateWebhookEndpoint({ tenant, id: we.id, url: ok.url() });
    const a2 = (await t.webhookEndpoints.resendEvent({ tenant, eventId: second.id, webhookEndpointId: we.id })).webhookAttempt!;
    const a3 = (await t.webhookEndpoints.resendEvent({ tenant, eventId: first.id, webhookEndpointId: we.id })).webhookAttempt!;
    const ids = async (query: { eventId?: string; status?: string; limit?: number; startingAfter?: string }) =>
      (await t.webhookEndpoints.listWebhookAttempts({ tenant, webhookEndpointId: we.id, ...query })).webhookAttempts.map((a) => a.id);
    expect(await ids({})).toEqual([a3.id, a2.id, a1.id]);
    expect(await ids({ eventId: first.id })).toEqual([a3.id, a1.id]);
    expect(await ids({ status: "failed" })).toEqual([a1.id]);
    expect(await ids({ status: "succeeded", eventId: second.id })).toEqual([a2.id]);
    expect(await ids({ limit: 1, startingAfter: a3.id })).toEqual([a2.id]);
    const page = await t.webhookEndpoints.listWebhookAttempts({ tenant, webhookEndpointId: we.id, limit: 2 });
    expect(page.hasMore).toBe(true);
    expect(page.webhookEndpointId).toBe(we.id);
    await expect(ids({ status: "pending" })).rejects.toMatchObject({ code: "parameter_invalid", param: "status" });
    await expect(ids({ eventId: "res_0000000000000000000000" })).rejects.toMatchObject({ code: "parameter_invalid", param: "event" });
  });

  it("refuses a resend to an endpoint not subscribed to the event's type: 400 parameter_invalid on webhook_endpoint, with its reason", async () => {
    const { test: tenant } = await t.newAccount();
    const we = await endpointAt(tenant, ok.url("/unsubscribed"), ["job.failed", "job.succeeded"]);
    const event = await newEvent(tenant);
    const before = ok.deliveries.length;
    await expect(t.webhookEndpoints.resendEvent({ tenant, eventId: event.id, webhookEndpointId: we.id })).rejects.toMatchObject({
      grpcCode: GrpcStatus.INVALID_ARGUMENT,
      code: "parameter_invalid",
      param: "webhook_endpoint",
      message: `Invalid webhook_endpoint: ${we.id} is not subscribed to resource.created events (its enabled_events: job.failed, job.succeeded).`,
    });
    // Nothing was scheduled: no delivery, no attempt.
    expect(await t.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION).countDocuments({ endpoint: we.id })).toBe(0);
    expect((await t.webhookEndpoints.listWebhookAttempts({ tenant, webhookEndpointId: we.id })).webhookAttempts).toHaveLength(0);
    expect(ok.deliveries.slice(before).filter((d) => d.url === "/unsubscribed")).toHaveLength(0);
  });

  it("404s an event or endpoint of another account or mode, names a missing endpoint", async () => {
    const a = await t.newAccount();
    const b = await t.newAccount();
    const we = await endpointAt(a.test, ok.url());
    const event = await newEvent(a.test);
    const otherWe = await endpointAt(b.test, ok.url());
    await expect(t.webhookEndpoints.resendEvent({ tenant: b.test, eventId: event.id, webhookEndpointId: otherWe.id })).rejects.toMatchObject({
      grpcCode: GrpcStatus.NOT_FOUND,
      param: "id",
    });
    await expect(t.webhookEndpoints.resendEvent({ tenant: a.test, eventId: event.id, webhookEndpointId: otherWe.id })).rejects.toMatchObject({
      code: "resource_missing",
      param: "webhook_endpoint",
    });
    await expect(t.webhookEndpoints.resendEvent({ tenant: a.live, eventId: event.id, webhookEndpointId: we.id })).rejects.toMatchObject({
      code: "resource_missing",
    });
    await expect(t.webhookEndpoints.resendEvent({ tenant: a.test, eventId: event.id, webhookEndpointId: "" })).rejects.toMatchObject({
      code: "parameter_missing",
      param: "webhook_endpoint",
    });
    await expect(t.webhookEndpoints.listWebhookAttempts({ tenant: b.test, webhookEndpointId: we.id })).rejects.toMatchObject({ code: "resource_missing" });
    await expect(t.webhookEndpoints.resendEvent({ tenant: a.test, eventId: "not-an-id", webhookEndpointId: we.id })).rejects.toMatchObject({
      code: "resource_missing",
      param: "id",
    });
  });
});

describe("RecoverWebhookEndpoint", () => {
  const deliveries = () => t.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
  /** A delivery as the workers leave it, of an event made `ageS` seconds ago. */
  function delivery(tenant: Tenant, endpoint: string, event: string, status: DeliveryDocument["status"], n: number): DeliveryDocument {
    return {
      _id: `${event}:${endpoint}:${n}`,
      account: tenant.accountId,
      livemode: tenant.livemode,
      event,
      endpoint,
      trigger: n === 0 ? "scheduled" : "recovery",
      status,
      due_at: 0,
      attempts: 1,
      first_failed_at: null,
      lease_owner: null,
      lease_until: null,
      epoch: 0,
      created: Math.floor(Date.now() / 1000),
    };
  }
  const nowS = () => Math.floor(Date.now() / 1000);
  const eventAgo = (seconds: number) => newId("evt", Date.now() - seconds * 1000);

  /** An event as the relay leaves it once fanned out, still waiting for `pending` endpoints. */
  const storeEvent = (tenant: Tenant, id: string, pending: string[]) =>
    t.db.collection<FannedOutEvent>(EVENTS_COLLECTION).insertOne({
      _id: id,
      type: "resource.created",
      created: Math.floor(Date.now() / 1000),
      account: tenant.accountId,
      livemode: tenant.livemode,
      sequence: 0,
      object: {},
      previous_attributes: null,
      request: { id: null, idempotency_key: null },
      pending_endpoints: pending,
      ...(pending.length > 0 ? { undelivered: true as const } : {}),
    });

  it("schedules one recovery delivery of every event since `since` whose deliveries to the endpoint all failed", async () => {
    const { test: tenant } = await t.newAccount();
    const we = await endpointAt(tenant, ok.url());
    const other = await endpointAt(tenant, ok.url());
    const [allFailed, failedTwice, answered, stillPending, tooOld, otherEndpoint] = [3600, 7200, 60, 60, 3 * 86_400, 60].map(eventAgo);
    // `answered` failed once, then got a 2xx (a resend, or a delivery the workers deleted on success): no longer pending.
    for (const [event, pending] of [
      [allFailed, [we.id]],
      [failedTwice, [we.id, other.id]],
      [answered, []],
      [stillPending, [we.id]],
      [tooOld, [we.id]],
      [otherEndpoint, [other.id]],
    ] as const)
      await storeEvent(tenant, event!, [...pending]);
    await deliveries().insertMany([
      delivery(tenant, we.id, allFailed!, "failed", 0),
      delivery(tenant, we.id, failedTwice!, "failed", 0),
      delivery(tenant, we.id, failedTwice!, "failed", 1),
      delivery(tenant, we.id, answered!, "failed", 0),
      delivery(tenant, we.id, stillPending!, "pending", 0),
      delivery(tenant, we.id, tooOld!, "failed", 0),
      delivery(tenant, other.id, otherEndpoint!, "failed", 0),
    ]);
    const since = nowS() - 86_400;
    // Two at once: between them every event is scheduled once.
    const [r1, r2] = await Promise.all([
      t.webhookEndpoints.recoverWebhookEndpoint({ tenant, id: we.id, since: BigInt(since) }),
      t.webhookEndpoints.recoverWebhookEndpoint({ tenant, id: we.id, since: BigInt(since) }),
    ]);
    expect(r1.scheduled + r2.scheduled).toBe(2);
    const scheduled = await deliveries().find({ endpoint: we.id, trigger: "recovery", status: "pending" }).toArray();
    expect(scheduled.map((d) => d.event).sort()).toEqual([allFailed, failedTwice].sort());
    for (const d of scheduled) expect(d).toMatchObject({ account: tenant.accountId, livemode: false, attempts: 0, lease_owner: null, epoch: 0 });
    // Pending now, so a second recovery finds nothing to do.
    expect((await t.webhookEndpoints.recoverWebhookEndpoint({ tenant, id: we.id, since: BigInt(since) })).scheduled).toBe(0);
    // Once that recovery failed too, the event can be recovered again.
    await deliveries().updateOne({ endpoint: we.id, event: allFailed!, trigger: "recovery" }, { $set: { status: "failed" } });
    expect((await t.webhookEndpoints.recoverWebhookEndpoint({ tenant, id: we.id, since: BigInt(since) })).scheduled).toBe(1);
    // Reaching further back takes in the older event.
    expect((await t.webhookEndpoints.recoverWebhookEndpoint({ tenant, id: we.id, since: BigInt(nowS() - 4 * 86_400) })).scheduled).toBe(1);
  });

  it("refuses a since in the future, older than 14 days or 0 (absent on the wire), a disabled endpoint, and another tenant's endpoint", async () => {
    const a = await t.newAccount();
    const we = await endpointAt(a.test, ok.url());
    for (const since of [BigInt(nowS() + 120), BigInt(nowS() - 14 * 86_400 - 120)]) {
      await expect(t.webhookEndpoints.recoverWebhookEndpoint({ tenant: a.test, id: we.id, since })).rejects.toMatchObject({
        code: "parameter_invalid",
        param: "since",
      });
    }
    // 0 is a value out of the range, not a missing one (the gateway answers a request without `since` itself).
    for (const request of [
      { tenant: a.test, id: we.id },
      { tenant: a.test, id: we.id, since: 0n },
    ]) {
      await expect(t.webhookEndpoints.recoverWebhookEndpoint(request)).rejects.toMatchObject({
        code: "parameter_invalid",
        param: "since",
        message: expect.stringMatching(/14 days ago/),
      });
    }
    await expect(t.webhookEndpoints.recoverWebhookEndpoint({ tenant: a.live, id: we.id, since: BigInt(nowS()) })).rejects.toMatchObject({
      code: "resource_missing",
    });
    await t.webhookEndpoints.updateWebhookEndpoint({ tenant: a.test, id: we.id, status: 2 });
    await expect(t.webhookEndpoints.recoverWebhookEndpoint({ tenant: a.test, id: we.id, since: BigInt(nowS()) })).rejects.toMatchObject({
      grpcCode: GrpcStatus.ABORTED,
      code: "state_conflict",
    });
  });
});
