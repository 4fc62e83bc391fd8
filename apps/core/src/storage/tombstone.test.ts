import { afterAll, beforeAll, expect, it } from "vitest";
import { newTenant, thing, thingsCollection, type ThingEvent } from "../testutil/storage.js";
import { findLive } from "./documents.js";
import { newEvent } from "./outbox.js";
import { tombstone } from "./tombstone.js";
import { updateVersioned } from "./versioned-update.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
});
afterAll(() => t.close());

const request = { requestId: "req_delete", idempotencyKey: null };

it("marks the document deleted with its event in one write; reads, updates and deletes then find nothing", async () => {
  const tenant = newTenant();
  const doc = thing(tenant, { n: 7 });
  await t.things.insertOne(doc);
  const gone = await tombstone(
    t.things,
    tenant,
    doc._id,
    (current): ThingEvent => newEvent("thing.deleted", tenant, { n: current.n, color: current.color }, request),
  );
  const { pending_events: _outbox, ...before } = doc;
  expect(gone).toEqual(before); // as it was before the delete, as reads load it
  const stored = (await t.things.findOne({ _id: doc._id }))!;
  expect(stored.deleted).toBe(true);
  expect(stored.version).toBe(1);
  expect(stored.pending_events.map((e) => [e.type, e.object.n, e.request.id])).toEqual([["thing.deleted", 7, "req_delete"]]);

  expect(await findLive(t.things, tenant, doc._id)).toBeNull();
  expect(await updateVersioned(t.things, tenant, doc._id, () => ({ set: { n: 8 }, events: [] }))).toBeNull();
  expect(await tombstone(t.things, tenant, doc._id, () => newEvent("thing.deleted", tenant, { n: 0, color: "" }, request))).toBeNull();
  expect((await t.things.findOne({ _id: doc._id }))!.pending_events).toHaveLength(1); // no second event
});

it("records exactly one deletion event when many delete at once", async () => {
  const tenant = newTenant();
  const doc = thing(tenant);
  await t.things.insertOne(doc);
  const results = await Promise.all(
    Array.from({ length: 10 }, () =>
      tombstone(t.things, tenant, doc._id, (c): ThingEvent => newEvent("thing.deleted", tenant, { n: c.n, color: c.color }, request)),
    ),
  );
  expect(results.filter((r) => r !== null)).toHaveLength(1);
  expect((await t.things.findOne({ _id: doc._id }))!.pending_events).toHaveLength(1);
});

it("does not delete another tenant's document", async () => {
  const tenant = newTenant();
  const doc = thing(tenant);
  await t.things.insertOne(doc);
  expect(await tombstone(t.things, newTenant(), doc._id, () => newEvent("thing.deleted", tenant, { n: 0, color: "" }, request))).toBeNull();
  expect((await t.things.findOne({ _id: doc._id }))!.deleted).toBeUndefined();
});
