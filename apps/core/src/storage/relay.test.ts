import { IDEMPOTENCY_RETENTION_MS } from "@rms/proto";
import { BSON } from "mongodb";
import { pino } from "pino";
import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newTenant, thing, thingsCollection, type ThingDocument, type ThingEvent } from "../testutil/storage.js";
import { newEvent } from "./outbox.js";
import { idTimeMs } from "../ids.js";
import { fastTtlMonitor, TTL_TEST_TIMEOUT_MS, TTL_WAIT_MS } from "../testutil/ttl.js";
import { ensureExpiryIndex, type Expiring } from "./expiry.js";
import { keysPerIndex, winningStages } from "@rms/test-db/testkit";
import {
  ensureEventExpiryIndex,
  ensureOutboxIndex,
  EVENT_RETENTION_MS,
  EVENTS_COLLECTION,
  HAS_PENDING_EVENTS,
  OutboxRelay,
  pullRelayed,
  relayedPull,
  SWEEP_BATCH,
} from "./relay.js";
import type { TenantDocument } from "./documents.js";
import { tombstone } from "./tombstone.js";
import { updateVersioned } from "./versioned-update.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
});
afterAll(() => t.close());

const logger = pino({ level: "silent" });
const request = { requestId: null, idempotencyKey: null };
const relayOf = () => new OutboxRelay(t.db, { sources: ["things"], logger });
const eventsOf = (id: string) => t.db.collection<ThingEvent & Expiring>(EVENTS_COLLECTION).find({ "object.id": id }).sort({ sequence: 1 }).toArray();

/** A thing inserted with its creation event, as a create writes it (made at `nowMs`). */
async function created(tenant = newTenant(), nowMs = Date.now()): Promise<ThingDocument> {
  const doc = thing(tenant, {}, nowMs);
  const event = newEvent("thing.created", tenant, { id: doc._id, n: 0, color: "red" }, request, null, nowMs);
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

it("a tombstone expires (TTL) only once its event is out and its idempotency window has closed, never with an event pending", {
  timeout: TTL_TEST_TIMEOUT_MS,
}, async () => {
  await fastTtlMonitor(t.db);
  await ensureExpiryIndex(t.things);
  const relay = relayOf();
  const deleteThing = (doc: ThingDocument) =>
    tombstone(t.things, doc, doc._id, (current): ThingEvent => newEvent("thing.deleted", doc, { id: doc._id, n: current.n, color: current.color }, request));
  const dayAgo = Date.now() - IDEMPOTENCY_RETENTION_MS - 60 * 60_000;
  const young = await created();
  const [old, pendingOld] = [await created(newTenant(), dayAgo), await created(newTenant(), dayAgo)];
  for (const doc of [young, old, pendingOld]) await deleteThing(doc);
  // The write that deletes says when the tombstone may go (its window's close), and nothing expires yet.
  for (const doc of [young, old, pendingOld]) {
    expect(await t.things.findOne({ _id: doc._id })).toMatchObject({ deleted: true, retain_until: new Date(idTimeMs(doc._id) + IDEMPOTENCY_RETENTION_MS) });
    expect((await t.things.findOne({ _id: doc._id }))!.expires_at).toBeUndefined();
  }

  // Events out: each tombstone gets its expiry in the write that empties its outbox.
  await relay.relayDocuments("things", [young._id, old._id]);
  expect(await t.things.findOne({ _id: young._id })).toMatchObject({
    pending_events: [],
    expires_at: new Date(idTimeMs(young._id) + IDEMPOTENCY_RETENTION_MS),
  });
  expect((await eventsOf(old._id)).at(-1)).toMatchObject({ type: "thing.deleted", sequence: 1, object: { id: old._id, n: 0, color: "red" } });

  // The old one goes; the one whose window is still open stays (a retried create still finds it), and so
  // does the old one whose deletion event was never copied (as a relay that died leaves it).
  await eventually(async () => expect(await t.things.findOne({ _id: old._id })).toBeNull(), { timeoutMs: TTL_WAIT_MS });
  expect(await t.things.findOne({ _id: young._id })).toMatchObject({ deleted: true });
  const pending = await t.things.findOne({ _id: pendingOld._id });
  expect(pending!.pending_events.map((e) => e.type)).toEqual(["thing.created", "thing.deleted"]);

  // Once the sweep has copied its events, it goes too, and its events are all in `events`.
  await relay.sweep();
  await eventually(async () => expect(await t.things.findOne({ _id: pendingOld._id })).toBeNull(), { timeoutMs: TTL_WAIT_MS });
  expect((await eventsOf(pendingOld._id)).map((e) => e.type)).toEqual(["thing.created", "thing.deleted"]);
});

it("the pull that empties an outbox starts the document's expiry; one that leaves an event pending does not", async () => {
  const doc = await created();
  const retainUntil = new Date(Date.now() - 1_000);
  await t.things.updateOne({ _id: doc._id }, { $set: { retain_until: retainUntil } });
  const late = newEvent("thing.changed", doc, { id: doc._id, n: 1, color: "red" }, request);
  const [first] = (await t.things.findOne({ _id: doc._id }))!.pending_events;
  // An event pushed after the relay read the outbox is not among the ids it pulls.
  await t.things.updateOne({ _id: doc._id }, { $push: { pending_events: late } });
  await t.things.updateOne({ _id: doc._id }, pullRelayed([first!._id]));
  const stillPending = (await t.things.findOne({ _id: doc._id }))!;
  expect(stillPending.pending_events.map((e) => e._id)).toEqual([late._id]);
  expect(stillPending.expires_at).toBeUndefined();
  await t.things.updateOne({ _id: doc._id }, pullRelayed([late._id]));
  expect(await t.things.findOne({ _id: doc._id })).toMatchObject({ pending_events: [], expires_at: retainUntil });
  // A document without `retain_until` (a live one) never gets an expiry.
  const live = await created();
  await relayOf().relayDocument("things", live._id);
  const relayed = (await t.things.findOne({ _id: live._id }))!;
  expect(relayed.pending_events).toEqual([]);
  expect("expires_at" in relayed).toBe(false);
});

it(
  "a document read without retain_until gets a plain $pull guarded by its absence: one made a tombstone since keeps its events for the next relay, " +
    "which starts its expiry",
  async () => {
    const doc = await created();
    const read = (await t.things.findOne({ _id: doc._id }, { projection: { pending_events: 1, retain_until: 1 } }))!;
    const pull = relayedPull(
      read,
      read.pending_events.map((e) => e._id),
    );
    expect(pull.update).toHaveProperty("$pull");
    // Between the relay's read and its pull, a delete makes it a tombstone (retain_until) with its own event.
    const removed = await tombstone(t.things, doc, doc._id, (current) =>
      newEvent("thing.deleted", doc, { id: doc._id, n: current.n, color: current.color }, request),
    );
    expect(removed).not.toBeNull();
    expect((await t.db.collection<TenantDocument>("things").updateOne(pull.filter, pull.update)).matchedCount).toBe(0);
    expect((await t.things.findOne({ _id: doc._id }))!.pending_events).toHaveLength(2);
    // The next relay reads it with its retain_until: the pipeline pull empties the outbox and starts the expiry.
    await relayOf().relayDocument("things", doc._id);
    const after = (await t.things.findOne({ _id: doc._id }))!;
    expect(after.pending_events).toEqual([]);
    expect(after.expires_at).toBeInstanceOf(Date);
    expect((await eventsOf(doc._id)).map((e) => e.type)).toEqual(["thing.created", "thing.deleted"]);
  },
);

it("copies each event with its expiry (30 days after it was made); the TTL index removes it then and keeps younger ones", {
  timeout: TTL_TEST_TIMEOUT_MS,
}, async () => {
  await fastTtlMonitor(t.db);
  await ensureEventExpiryIndex(t.db);
  const relay = relayOf();
  const old = await created(newTenant(), Date.now() - EVENT_RETENTION_MS - 60 * 60_000);
  const young = await created(newTenant(), Date.now() - EVENT_RETENTION_MS + 60 * 60_000);
  await relay.relayDocuments("things", [old._id, young._id]);
  // The fast TTL monitor (shared by every file on this mongod) may already have removed the old one: that is the point.
  for (const doc of [old, young]) {
    const events = await eventsOf(doc._id);
    if (doc === old && events.length === 0) continue;
    expect(events[0]!.expires_at).toEqual(new Date(events[0]!.created * 1000 + EVENT_RETENTION_MS));
  }
  await eventually(async () => expect(await eventsOf(old._id)).toHaveLength(0), { timeoutMs: TTL_WAIT_MS });
  expect(await eventsOf(young._id)).toHaveLength(1);
});

it("the sweep finds the documents with pending events from the outbox index, which holds only their events", async () => {
  await ensureOutboxIndex(t.things);
  await created(); // left pending
  const relayed = await created();
  await relayOf().relayDocument("things", relayed._id);
  const plan = winningStages(await t.things.find(HAS_PENDING_EVENTS).limit(SWEEP_BATCH).explain("queryPlanner"));
  expect(plan).toContain("IXSCAN(pending_events)");
  expect(plan).not.toContain("COLLSCAN");
  const waiting = await t.things.find(HAS_PENDING_EVENTS).toArray();
  expect(waiting.map((d) => d._id)).not.toContain(relayed._id);
  expect((await keysPerIndex(t.db, "things"))["pending_events"]).toBe(waiting.reduce((n, d) => n + d.pending_events.length, 0));
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

it("a writer far ahead of the relay: the notices held stay at the cap, and what was dropped is caught up from the outbox index, each event once", async () => {
  const cap = 10;
  const relay = new OutboxRelay(t.db, { sources: ["things"], logger, queueMax: cap });
  const docs = await Promise.all(Array.from({ length: 300 }, () => created()));
  let most = 0;
  for (const doc of docs) {
    relay.notify("things", doc._id);
    most = Math.max(most, relay.backlog);
  }
  expect(most).toBe(cap);
  // No sweep runs here: only the fast path and its catch-up.
  await relay.idle();
  expect(relay.backlog).toBe(0);
  for (const doc of docs) {
    expect((await eventsOf(doc._id)).map((e) => e.sequence)).toEqual([0]);
    expect((await t.things.findOne({ _id: doc._id }))!.pending_events).toEqual([]);
  }
});
