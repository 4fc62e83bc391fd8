import { eventually } from "@rms/test-db/testkit";
import { pino } from "pino";
import { Registry } from "prom-client";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Tenant } from "../caller.js";
import { eventRelay } from "../event-relay.js";
import { newId } from "../ids.js";
import { DEFAULT_SETTINGS } from "../settings.js";
import { newEvent } from "../storage/outbox.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { newTenant, thingsCollection } from "../testutil/storage.js";
import { startReceiver, type Receiver, type ReceiverHandler } from "../testutil/webhook-receiver.js";
import { insertEndpoint, testKeyring, type TestEndpoint } from "../testutil/webhooks.js";
import { WebhookEndpointStore } from "../webhook-endpoints/store.js";
import { DISABLE_AFTER_FAILING_MS, parseRetrySchedule } from "../webhooks/schedule.js";
import { deliveriesPoller } from "../worker/tasks/deliveries.js";
import type { QueuePoller } from "../worker/tasks/poller.js";
import { attemptDelivery, type DeliveryEnvironment } from "./attempt.js";
import { disableEndpoint } from "./disable.js";
import type { ClaimedFlight } from "./queue.js";
import { webhookFanOut, type RelayedEvent } from "./fanout.js";
import {
  WEBHOOK_DELIVERIES_COLLECTION,
  WEBHOOK_ENDPOINTS_COLLECTION,
  type DeliveryDocument,
  type DisablingEndpoint,
  type EndpointDisabledEvent,
  type FannedOutEvent,
} from "./model.js";

// CONTRACT.md section 7: `webhook_endpoint.disabled` (reason `gone` after a 410, `failing` after 5 days of failed
// attempts), exactly once per disabling, recorded in the write that disables the endpoint (its outbox), and
// delivered to the account's other enabled endpoints that subscribe to it, never to the disabled one.

let t: Awaited<ReturnType<typeof thingsCollection>>;
const keyring = testKeyring();
const logger = pino({ level: "silent" });
const open: Array<{ close(): Promise<void> }> = [];
const running: QueuePoller<ClaimedFlight>[] = [];

beforeAll(async () => {
  t = await thingsCollection();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((w) => w.stop()));
  await Promise.all(open.splice(0).map((r) => r.close()));
});
afterAll(() => t?.close());

type StoredEndpoint = DisablingEndpoint & { pending_events: EndpointDisabledEvent[] };
const endpoints = () => t.db.collection<StoredEndpoint>(WEBHOOK_ENDPOINTS_COLLECTION);
const events = () => t.db.collection<FannedOutEvent>(EVENTS_COLLECTION);
const deliveries = () => t.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
const disabledEventsOf = async (endpoint: TestEndpoint) =>
  (await events().find({ type: "webhook_endpoint.disabled", "object.id": endpoint.doc._id }).toArray()) as FannedOutEvent[];

async function receiver(handler?: ReceiverHandler): Promise<Receiver> {
  const started = await startReceiver(handler ? { handler } : {});
  open.push(started);
  return started;
}

/** An event of the tenant as the relay stores it, waiting for the given endpoints (a delivery queued for each). */
async function relayedEvent(tenant: Tenant): Promise<FannedOutEvent> {
  const event = newEvent("resource.created", tenant, { id: newId("res"), name: "w" }, { requestId: null, idempotencyKey: null });
  const [prepared] = await webhookFanOut(t.db)([event as typeof event & RelayedEvent]);
  await events().insertOne(prepared as FannedOutEvent);
  return prepared as FannedOutEvent;
}

function worker(workerId: string): QueuePoller<ClaimedFlight> {
  const settings = { ...DEFAULT_SETTINGS, secretKeyring: keyring, webhookAllowPrivate: true, webhookRetrySchedule: parseRetrySchedule("1s") };
  const started = deliveriesPoller({ db: t.db, logger, workerId, written: () => {}, metrics: new Registry(), settings }, { pollMs: 20 });
  started.start();
  running.push(started);
  return started;
}

describe("webhook_endpoint.disabled", () => {
  it(
    "a 410 records one event (reason gone, the endpoint as disabled, no secret) " + "in the disabling write, delivered to the other subscribed endpoints only",
    async () => {
      const tenant = newTenant();
      const gone = await receiver((_q, response) => response.writeHead(410).end("gone"));
      const listening = await receiver();
      const a = await insertEndpoint(t.db, keyring, tenant, { url: gone.url(), enabled_events: ["resource.created", "webhook_endpoint.disabled"] });
      const b = await insertEndpoint(t.db, keyring, tenant, { url: listening.url("/b"), enabled_events: ["webhook_endpoint.disabled"] });
      const all = await insertEndpoint(t.db, keyring, tenant, { url: listening.url("/all"), enabled_events: ["*"] });
      const other = await insertEndpoint(t.db, keyring, tenant, { url: listening.url("/other"), enabled_events: ["resource.created"] });
      const elsewhere = await insertEndpoint(t.db, keyring, newTenant(), { url: listening.url("/elsewhere"), enabled_events: ["webhook_endpoint.disabled"] });
      const event = await relayedEvent(tenant);
      const written: string[] = [];
      const env: DeliveryEnvironment = { db: t.db, keyring, allowPrivate: true, written: (collection, id) => written.push(`${collection}/${id}`) };

      const { disabled } = await attemptDelivery(env, { event, endpoint: a.doc, trigger: "scheduled" });

      expect(disabled).toBe("gone");
      const stored = (await endpoints().findOne({ _id: a.doc._id }))!;
      expect(stored).toMatchObject({ status: "disabled", disabled_reason: "gone", version: 1 });
      expect(stored.pending_events).toHaveLength(1);
      const [recorded] = stored.pending_events;
      expect(recorded).toMatchObject({ type: "webhook_endpoint.disabled", reason: "gone", sequence: 1, account: tenant.account, livemode: tenant.livemode });
      expect(recorded!.object).toEqual({
        id: a.doc._id,
        url: a.doc.url,
        enabled_events: ["resource.created", "webhook_endpoint.disabled"],
        status: "disabled",
        description: null,
        metadata: [],
        livemode: false,
        api_version: "1.4",
        created: a.doc.created,
        signature_scheme: "v1",
        public_key: null,
      });
      expect(JSON.stringify(recorded)).not.toMatch(/whsec_|sealed|enc1\./);
      expect(written).toEqual([`${WEBHOOK_ENDPOINTS_COLLECTION}/${a.doc._id}`]);

      // An operator enables it again before the relay copies the event: it still does not get its own event.
      await endpoints().updateOne({ _id: a.doc._id }, { $set: { status: "enabled" } });
      await eventRelay(t.db, logger).relayDocument(WEBHOOK_ENDPOINTS_COLLECTION, a.doc._id);
      const [copied] = await disabledEventsOf(a);
      expect(copied).toBeDefined();
      expect([...copied!.pending_endpoints!].sort()).toEqual([b.doc._id, all.doc._id].sort());
      const queued = await deliveries().find({ event: copied!._id }).toArray();
      expect(queued.map((d) => d.endpoint).sort()).toEqual([b.doc._id, all.doc._id].sort());
      expect((await endpoints().findOne({ _id: a.doc._id }))!.pending_events).toEqual([]);

      // The workers deliver it, signed like any event, with `data.reason` and the endpoint without its secret.
      await endpoints().updateOne({ _id: a.doc._id }, { $set: { status: "disabled" } });
      worker(newId("wa"));
      const arrived = await eventually(() => {
        const found = listening.deliveries.filter((d) => d.headers["webhook-id"] === copied!._id);
        expect(found.map((d) => d.url).sort()).toEqual(["/all", "/b"]);
        return found;
      });
      for (const delivery of arrived) {
        const secret = delivery.url === "/b" ? b.secrets[0]! : all.secrets[0]!;
        const body = new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as { data: Record<string, unknown> };
        expect(body).toMatchObject({
          type: "webhook_endpoint.disabled",
          sequence: 1,
          data: { reason: "gone", object: { id: a.doc._id, object: "webhook_endpoint", status: "disabled" } },
        });
        expect(body.data["object"]).not.toHaveProperty("secret");
      }
      // Neither the endpoint not subscribed to it (`other`) nor another account's (`elsewhere`) got one.
      expect(queued.map((d) => d.endpoint)).not.toContain(other.doc._id);
      expect(queued.map((d) => d.endpoint)).not.toContain(elsewhere.doc._id);
    },
  );

  it("5 days of failed attempts (on an injected clock) disable with reason failing, once", async () => {
    const tenant = newTenant();
    const refused = await startReceiver();
    const deadUrl = refused.url();
    await refused.close();
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: deadUrl });
    const event = await relayedEvent(tenant);
    const start = Date.now() - 30 * 86_400_000;
    let now = start;
    const env: DeliveryEnvironment = { db: t.db, keyring, allowPrivate: true, now: () => now };
    const attempt = async () => attemptDelivery(env, { event, endpoint: (await endpoints().findOne({ _id: endpoint.doc._id }))!, trigger: "scheduled" });

    expect((await attempt()).disabled).toBeNull();
    now = start + DISABLE_AFTER_FAILING_MS - 60_000;
    expect((await attempt()).disabled).toBeNull();
    expect((await endpoints().findOne({ _id: endpoint.doc._id }))!.pending_events).toEqual([]);
    now = start + DISABLE_AFTER_FAILING_MS;
    expect((await attempt()).disabled).toBe("failing");
    now += 60_000;
    expect((await attempt()).disabled).toBeNull();

    const stored = (await endpoints().findOne({ _id: endpoint.doc._id }))!;
    expect(stored).toMatchObject({ status: "disabled", disabled_reason: "failing" });
    expect(stored.pending_events.map((e) => [e.type, e.reason, e.created])).toEqual([
      ["webhook_endpoint.disabled", "failing", Math.floor((start + DISABLE_AFTER_FAILING_MS) / 1000)],
    ]);
  });

  it("exactly once when two workers' attempts disable the same endpoint at the same time", async () => {
    const tenant = newTenant();
    // Slow 410s, so both workers have attempts in flight when the first answer comes.
    const gone = await receiver((_q, response) => setTimeout(() => response.writeHead(410).end("gone"), 150));
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: gone.url(), enabled_events: ["resource.created"] });
    for (let i = 0; i < 8; i++) await relayedEvent(tenant);
    worker("worker-one");
    worker("worker-two");

    await eventually(async () => expect(await deliveries().countDocuments({ endpoint: endpoint.doc._id, status: "pending" })).toBe(0));
    // More than one attempt reached the receiver and asked to disable; one write disabled, with one event.
    expect(gone.deliveries.length).toBeGreaterThan(1);
    const stored = (await endpoints().findOne({ _id: endpoint.doc._id }))!;
    expect(stored).toMatchObject({ status: "disabled", disabled_reason: "gone", version: 1 });
    expect(stored.pending_events.map((e) => e.reason)).toEqual(["gone"]);
  });

  it("exactly once among concurrent disables; never for an endpoint already disabled", async () => {
    const tenant = newTenant();
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: "https://example.com/hook" });
    const outcomes = await Promise.all(Array.from({ length: 8 }, (_, i) => disableEndpoint(t.db, endpoint.doc, i % 2 === 0 ? "gone" : "failing", Date.now())));
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    expect((await endpoints().findOne({ _id: endpoint.doc._id }))!.pending_events).toHaveLength(1);
    expect(await disableEndpoint(t.db, endpoint.doc, "gone", Date.now())).toBe(false);
  });

  it("deleting the endpoint relays its pending event first, so the disabling is never lost", async () => {
    const tenant = newTenant();
    const listening = await insertEndpoint(t.db, keyring, tenant, { url: "https://example.com/in", enabled_events: ["webhook_endpoint.disabled"] });
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: "https://example.com/hook" });
    expect(await disableEndpoint(t.db, endpoint.doc, "gone", Date.now())).toBe(true);
    const relay = eventRelay(t.db, logger);
    const store = new WebhookEndpointStore(t.db);

    // Without a way to relay it, the delete refuses rather than lose the event.
    await expect(store.delete(tenant, endpoint.doc._id)).rejects.toMatchObject({ code: "service_unavailable" });
    expect(await endpoints().countDocuments({ _id: endpoint.doc._id })).toBe(1);

    const deleted = await store.delete(tenant, endpoint.doc._id, undefined, async (collection, id) => void (await relay.relayDocument(collection, id)));
    expect(deleted?._id).toBe(endpoint.doc._id);
    expect(await endpoints().countDocuments({ _id: endpoint.doc._id })).toBe(0);
    const [copied] = await disabledEventsOf(endpoint);
    expect(copied).toMatchObject({ reason: "gone", pending_endpoints: [listening.doc._id] });
  });
});
