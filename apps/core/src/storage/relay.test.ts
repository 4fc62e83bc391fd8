import { IDEMPOTENCY_RETENTION_MS } from "@rms/proto";
import { BSON } from "mongodb";
import { pino } from "pino";
import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newTenant, thing, thingsCollection, type ThingDocument, type ThingEvent } from "../testutil/storage.js";
import { newEvent } from "./outbox.js";
import { EVENT_RETENTION_MS, EVENTS_COLLECTION, OutboxRelay, RETENTION_PASS_INTERVAL_MS } from "./relay.js";
import { tombstone } from "./tombstone.js";
import { updateVersioned } from "./versioned-update.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
});
afterAll(() => t.close());

const logger = pino({ level: "silent" });
const request = { requestId: null, idempotencyKey: null };
const relayOf = (now?: () => number) => new OutboxRelay(t.db, { sources: ["things"], logger, ...(now ? { now } : {}) });
const eventsOf = (id: string) => t.db.collection<ThingEvent>(EVENTS_COLLECTION).find({ "object.id": id }).sort({ sequence: 1 }).toArray();

/** A thing inserted with its creation event, as a create writes it. */
async function created(tenant = newTenant()): Promise<ThingDocument> {
  const doc = thing(tenant);
  const event = newEvent("thing.created", tenant, { id: doc._id, n: 0, color: "red" }, request);
  await t.things.insertOne({ ...doc, pending_events: [event] });
  return doc;
}

const bump = (doc: ThingDocument, color = "red") =>
  updateVersioned(t.things, doc, doc._id, (current) => {
    const event: ThingEvent = newEvent("thing.changed", doc, { id: doc._id, n: current.n + 1, color }, request, { n: current.n });
    return { set: { n: current.n + 1, color }, events: [event] };
  });

it("moves every event exactly once while many updates race and two relays run at the same time; sequence follows the version", async () => {
  const doc = await created();
  const updates = 40;
  const relays = [relayOf(), relayOf()];
  let writing = true;
  // Both relays loop over the document (and sweep) the whole time the updates commit.
  const relaying = relays.map(async (relay) => {
    while (writing) {
      await relay.relayDocument("things", doc._id);
      await relay.sweep();
    }
  });
  await Promise.all(Array.from({ length: updates }, () => bump(doc)));
  writing = false;
  await Promise.all(relaying);
  await Promise.all(relays.map((relay) => relay.relayDocument("things", doc._id)));

  const events = await eventsOf(doc._id);
  expect(events).toHaveLength(updates + 1);
  expect(new Set(events.map((e) => e._id)).size).toBe(updates + 1);
  // One event per committed version: 0 for the creation, then 1..updates, each update's snapshot its own n.
  expect(events.map((e) => e.sequence)).toEqual(Array.from({ length: updates + 1 }, (_, i) => i));
  expect(events.slice(1).map((e) => e.object.n)).toEqual(Array.from({ length: updates }, (_, i) => i + 1));
  expect((await t.things.findOne({ _id: doc._id }))!.pending_events).toEqual([]);
});

it("after a crash between the copy and the pull, the sweep pulls without copying twice", async () => {
  const doc = await created();
  await bump(doc);
  const pending = (await t.things.findOne({ _id: doc._id }))!.pending_events;
  expect(pending).toHaveLength(2);
  // The crash: the copy happened, the pull did not.
  await t.db.collection<ThingEvent>(EVENTS_COLLECTION).insertMany(pending);

  const moved = await relayOf().sweep();
  expect(moved.events).toBeGreaterThanOrEqual(2);
  expect((await eventsOf(doc._id)).map((e) => e._id)).toEqual(pending.map((e) => e._id));
  expect((await t.things.findOne({ _id: doc._id }))!.pending_events).toEqual([]);
});

it("the write path's notice relays in the background: a resource updated many times keeps a small document", async () => {
  const doc = await created();
  const relay = relayOf();
  const sizeNow = async () => BSON.calculateObjectSize((await t.things.findOne({ _id: doc._id }))!);
  // A large snapshot per event, as the probing of the issue used: without the relay, the document grows by one each update.
  const large = "x".repeat(4_000);
  await bump(doc, large);
  relay.notify("things", doc._id);
  await relay.idle();
  const first = await sizeNow();
  for (let i = 0; i < 200; i++) {
    await bump(doc, large);
    relay.notify("things", doc._id);
  }
  await relay.idle();
  expect(await sizeNow()).toBeLessThan(2 * first);
  expect(await eventsOf(doc._id)).toHaveLength(202);
});

it("removes a tombstone only once its event is out and its idempotency window has closed (clock moved)", async () => {
  let nowMs = Date.now();
  const relay = relayOf(() => nowMs);
  const doc = await created();
  await tombstone(t.things, doc, doc._id, (current): ThingEvent => newEvent("thing.deleted", doc, { id: doc._id, n: current.n, color: current.color }, request));

  // Event out, window open: the tombstone stays, so a retried create still finds its first result.
  await relay.relayDocument("things", doc._id);
  await relay.sweep();
  expect(await t.things.findOne({ _id: doc._id })).toMatchObject({ deleted: true, pending_events: [] });
  const deleted = (await eventsOf(doc._id)).at(-1)!;
  expect(deleted).toMatchObject({ type: "thing.deleted", sequence: 1, object: { id: doc._id, n: 0, color: "red" } });

  // Window closed with an event still pending (pushed directly here, as a crash would leave it): the
  // sweep moves the event first, and only then removes the tombstone.
  nowMs += IDEMPOTENCY_RETENTION_MS + 1_000;
  const late = newEvent("thing.changed", doc, { id: doc._id, n: 0, color: "red" }, request);
  await t.things.updateOne({ _id: doc._id }, { $push: { pending_events: late } });
  await relay.sweep();
  expect(await t.things.findOne({ _id: doc._id })).toBeNull();
  expect((await eventsOf(doc._id)).map((e) => e._id)).toContain(late._id);
});

it("deletes events once they are past their 30 days, and keeps younger ones (clock moved)", async () => {
  let nowMs = Date.now();
  const relay = relayOf(() => nowMs);
  const doc = await created();
  await relay.relayDocument("things", doc._id);
  nowMs += EVENT_RETENTION_MS - 60_000;
  await relay.sweep();
  expect(await eventsOf(doc._id)).toHaveLength(1);
  nowMs += RETENTION_PASS_INTERVAL_MS + 60_000; // the next retention pass, when the event is past its 30 days
  expect((await relay.sweep()).expired).toBeGreaterThanOrEqual(1);
  expect(await eventsOf(doc._id)).toHaveLength(0);
});

it("relays what a crash left as soon as it starts, without waiting for its first interval", async () => {
  const doc = await created(); // written, never relayed: as a core killed right after its write leaves it
  const relay = relayOf();
  relay.start(10 * 60_000); // an interval far longer than the wait below
  try {
    await eventually(async () => expect(await eventsOf(doc._id)).toHaveLength(1), { timeoutMs: 10_000 });
  } finally {
    await relay.stop();
  }
});

it("relays many documents together (the fast path's batches): each event once, also when some were copied before, and the outboxes empty", async () => {
  const docs = await Promise.all(Array.from({ length: 30 }, () => created()));
  for (const doc of docs.slice(0, 10)) await bump(doc);
  // An earlier run copied the first five documents' events but died before pulling them.
  const relay = relayOf();
  for (const doc of docs.slice(0, 5)) {
    const { pending_events } = (await t.things.findOne({ _id: doc._id }))!;
    await t.db.collection(EVENTS_COLLECTION).insertMany(pending_events as never[]);
  }
  expect(
    await relay.relayDocuments(
      "things",
      docs.map((d) => d._id),
    ),
  ).toBe(40);
  for (const [i, doc] of docs.entries()) {
    const events = await eventsOf(doc._id);
    expect(events.map((e) => e.sequence)).toEqual(i < 10 ? [0, 1] : [0]);
    expect((await t.things.findOne({ _id: doc._id }))!.pending_events).toEqual([]);
  }
  // Noticed through the fast path in one go: nothing left to move.
  for (const doc of docs) relay.notify("things", doc._id);
  await relay.idle();
  expect(
    await relay.relayDocuments(
      "things",
      docs.map((d) => d._id),
    ),
  ).toBe(0);
});
