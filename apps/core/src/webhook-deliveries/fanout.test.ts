import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newEvent } from "../storage/outbox.js";
import { EVENTS_COLLECTION, OutboxRelay, type Relayed } from "../storage/relay.js";
import { newTenant, thing, thingsCollection, type ThingDocument, type ThingEvent } from "../testutil/storage.js";
import { insertEndpoint, testKeyring } from "../testutil/webhooks.js";
import { webhookFanOut, wantsEvent, type RelayedEvent } from "./fanout.js";
import { scheduledDeliveryId, WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDocument, type FannedOutEvent } from "./model.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
});
afterAll(() => t.close());

const logger = pino({ level: "silent" });
const keyring = testKeyring();
const request = { requestId: null, idempotencyKey: null };
const url = "https://hooks.example.com/in";
const fanOut = () => {
  const prepare = webhookFanOut(t.db);
  return (events: Relayed[]) => prepare(events as (Relayed & RelayedEvent)[]);
};
const relayOf = () => new OutboxRelay(t.db, { sources: ["things"], logger, prepare: fanOut() });
const deliveriesOf = (eventId: string) => t.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION).find({ event: eventId }).toArray();
const storedEvent = (id: string) => t.db.collection<FannedOutEvent>(EVENTS_COLLECTION).findOne({ _id: id });

async function createdThing(tenant = newTenant()): Promise<{ doc: ThingDocument; event: ThingEvent }> {
  const doc = thing(tenant);
  const event = newEvent("thing.created", tenant, { id: doc._id, n: 0, color: "red" }, request);
  await t.things.insertOne({ ...doc, pending_events: [event] });
  return { doc, event };
}

it("matches `*` and the exact type only", () => {
  expect(wantsEvent(["*"], "resource.created")).toBe(true);
  expect(wantsEvent(["resource.created"], "resource.created")).toBe(true);
  expect(wantsEvent(["resource.updated"], "resource.created")).toBe(false);
  expect(wantsEvent(["resource.*"], "resource.created")).toBe(false);
  expect(wantsEvent([], "resource.created")).toBe(false);
});

it("queues one delivery per enabled endpoint of the tenant that wants the type, and the event names exactly those as pending", async () => {
  const tenant = newTenant();
  const all = await insertEndpoint(t.db, keyring, tenant, { url, enabled_events: ["*"] });
  const exact = await insertEndpoint(t.db, keyring, tenant, { url, enabled_events: ["thing.changed", "thing.created"] });
  await insertEndpoint(t.db, keyring, tenant, { url, enabled_events: ["thing.deleted"] });
  await insertEndpoint(t.db, keyring, tenant, { url, status: "disabled" });
  await insertEndpoint(t.db, keyring, { ...tenant, livemode: true }, { url });
  await insertEndpoint(t.db, keyring, newTenant(), { url });
  const { doc, event } = await createdThing(tenant);

  expect(await relayOf().relayDocument("things", doc._id)).toBe(1);

  const wanted = [all.doc._id, exact.doc._id].sort();
  expect((await storedEvent(event._id))!.pending_endpoints!.slice().sort()).toEqual(wanted);
  // The indexed form of "an endpoint still waits" (the events list's delivery_success).
  expect(await storedEvent(event._id)).toMatchObject({ undelivered: true });
  const deliveries = await deliveriesOf(event._id);
  expect(deliveries.map((d) => d._id).sort()).toEqual(wanted.map((e) => scheduledDeliveryId(event._id, e)).sort());
  expect(
    deliveries.every((d) => d.status === "pending" && d.trigger === "scheduled" && d.attempts === 0 && d.account === tenant.account && d.epoch === 0),
  ).toBe(true);
});

it("an event of a tenant without endpoints is copied with no pending endpoints and no deliveries", async () => {
  const { doc, event } = await createdThing();
  await relayOf().relayDocument("things", doc._id);
  expect((await storedEvent(event._id))!.pending_endpoints).toEqual([]);
  expect(await storedEvent(event._id)).not.toHaveProperty("undelivered");
  expect(await deliveriesOf(event._id)).toHaveLength(0);
});

it("a crash after the deliveries were queued and before the event was copied: the next relay queues nothing twice", async () => {
  const tenant = newTenant();
  const one = await insertEndpoint(t.db, keyring, tenant, { url });
  const { doc, event } = await createdThing(tenant);
  // The first run got as far as the deliveries, then died.
  await fanOut()([event]);
  expect(await deliveriesOf(event._id)).toHaveLength(1);
  expect(await storedEvent(event._id)).toBeNull();

  await relayOf().relayDocument("things", doc._id);
  expect((await deliveriesOf(event._id)).map((d) => d.endpoint)).toEqual([one.doc._id]);
  expect((await storedEvent(event._id))!.pending_endpoints).toEqual([one.doc._id]);
});

it("a crash after the copy and before the pull: the sweep relays again, with no second delivery, even for an endpoint created meanwhile", async () => {
  const tenant = newTenant();
  const one = await insertEndpoint(t.db, keyring, tenant, { url });
  const { doc, event } = await createdThing(tenant);
  // The first run copied the event and died before pulling it from the document.
  const prepared = await fanOut()([event]);
  await t.db.collection(EVENTS_COLLECTION).insertOne(prepared[0] as never);
  expect((await t.things.findOne({ _id: doc._id }))!.pending_events).toHaveLength(1);
  await insertEndpoint(t.db, keyring, tenant, { url });

  const swept = await relayOf().sweep();
  expect(swept.events).toBeGreaterThanOrEqual(1);
  expect((await t.things.findOne({ _id: doc._id }))!.pending_events).toEqual([]);
  expect((await deliveriesOf(event._id)).map((d) => d.endpoint)).toEqual([one.doc._id]);
  expect((await storedEvent(event._id))!.pending_endpoints).toEqual([one.doc._id]);
});

it("two relays racing over the same document queue each delivery once", async () => {
  const tenant = newTenant();
  await insertEndpoint(t.db, keyring, tenant, { url });
  await insertEndpoint(t.db, keyring, tenant, { url });
  const { doc, event } = await createdThing(tenant);
  await Promise.all([relayOf().relayDocument("things", doc._id), relayOf().relayDocument("things", doc._id), relayOf().relayDocument("things", doc._id)]);
  const deliveries = await deliveriesOf(event._id);
  expect(deliveries).toHaveLength(2);
  expect((await storedEvent(event._id))!.pending_endpoints).toHaveLength(2);
});
