import { Metadata } from "@grpc/grpc-js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { budgetOf, DEADLINE_MARGIN_MS } from "../budget.js";
import { newTenant, thing, thingsCollection, type ThingDocument, type ThingEvent } from "../testutil/storage.js";
import { WITHOUT_OUTBOX, type Loaded } from "./documents.js";
import { newEvent } from "./outbox.js";
import { updateVersioned } from "./versioned-update.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
});
afterAll(() => t.close());

const request = { requestId: "req_test", idempotencyKey: null };
const bump = (tenant: ReturnType<typeof newTenant>) => (current: Loaded<ThingDocument>) => {
  const next = { n: current.n + 1, color: current.color };
  const event: ThingEvent = newEvent("thing.changed", tenant, next, request, { n: current.n });
  return { set: { n: next.n }, events: [event] };
};

it("applies every one of many concurrent read-modify-writes exactly once, each with its event, in commit order", async () => {
  const tenant = newTenant();
  const doc = thing(tenant);
  await t.things.insertOne(doc);
  const racers = 20;
  const results = await Promise.all(Array.from({ length: racers }, () => updateVersioned(t.things, tenant, doc._id, bump(tenant))));
  expect(results.map((r) => r!.after.n).sort((a, b) => a - b)).toEqual(Array.from({ length: racers }, (_, i) => i + 1));
  const stored = (await t.things.findOne({ _id: doc._id }))!;
  expect(stored.n).toBe(racers);
  expect(stored.version).toBe(racers);
  // Each event saw the previous one's result: no lost update, no event twice.
  expect(stored.pending_events.map((e) => e.object.n)).toEqual(Array.from({ length: racers }, (_, i) => i + 1));
  expect(new Set(stored.pending_events.map((e) => e._id)).size).toBe(racers);
});

it("returns the document as written, and writes nothing when the change decides there is nothing to do", async () => {
  const tenant = newTenant();
  const doc = thing(tenant, { n: 5 });
  await t.things.insertOne(doc);
  const changed = await updateVersioned(t.things, tenant, doc._id, bump(tenant));
  expect(changed!.before.n).toBe(5);
  // As written, and as reads load it: without the outbox.
  expect(changed!.after).toEqual(await t.things.findOne({ _id: doc._id }, WITHOUT_OUTBOX));
  expect("pending_events" in changed!.after).toBe(false);
  const unchanged = await updateVersioned(t.things, tenant, doc._id, () => null);
  expect(unchanged!.after.version).toBe(1);
  expect((await t.things.findOne({ _id: doc._id }))!.version).toBe(1);
});

it("finds nothing for another tenant, the other mode, a tombstone or an unknown id, and writes nothing", async () => {
  const tenant = newTenant();
  const doc = thing(tenant);
  const dead = { ...thing(tenant), deleted: true as const };
  await t.things.insertMany([doc, dead]);
  expect(await updateVersioned(t.things, newTenant(), doc._id, bump(tenant))).toBeNull();
  expect(await updateVersioned(t.things, { ...tenant, livemode: true }, doc._id, bump(tenant))).toBeNull();
  expect(await updateVersioned(t.things, tenant, dead._id, bump(tenant))).toBeNull();
  expect(await updateVersioned(t.things, tenant, "res_unknown", bump(tenant))).toBeNull();
  expect((await t.things.find({ account: tenant.account }).toArray()).map((d) => d.version)).toEqual([0, 0]);
});

it("refuses to write when the caller's deadline leaves no budget (UNAVAILABLE, nothing written)", async () => {
  const tenant = newTenant();
  const doc = thing(tenant);
  await t.things.insertOne(doc);
  const context = {
    method: "/test/Update",
    metadata: new Metadata(),
    signal: new AbortController().signal,
    deadline: Date.now() + DEADLINE_MARGIN_MS / 2,
    caller: null,
  };
  await expect(updateVersioned(t.things, tenant, doc._id, bump(tenant), budgetOf(context))).rejects.toMatchObject({ code: "service_unavailable" });
  expect((await t.things.findOne({ _id: doc._id }))!.version).toBe(0);
});
