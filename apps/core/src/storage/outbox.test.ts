import { afterAll, beforeAll, expect, it } from "vitest";
import { idTimeMs, isId } from "../ids.js";
import { newTenant, thing, thingsCollection, type ThingEvent } from "../testutil/storage.js";
import { newEvent, pushEvents } from "./outbox.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
});
afterAll(() => t.close());

it("makes each event's id before the write, from the time it is given, with the tenant and request", () => {
  const tenant = newTenant(true);
  const at = Date.UTC(2030, 0, 1);
  const event: ThingEvent = newEvent("thing.changed", tenant, { n: 1, color: "red" }, { requestId: "req_1", idempotencyKey: "k" }, { n: 0 }, at);
  expect(isId("evt", event._id)).toBe(true);
  expect(idTimeMs(event._id)).toBe(at);
  expect(event).toMatchObject({ type: "thing.changed", created: at / 1000, account: tenant.account, livemode: true, previous_attributes: { n: 0 } });
  expect(event.request).toEqual({ id: "req_1", idempotency_key: "k" });
});

it("carries no trace field while tracing is off (no span is ever active): nothing is stored for it", () => {
  const event = newEvent("thing.changed", newTenant(), { n: 1, color: "red" }, { requestId: null, idempotencyKey: null });
  expect(event).not.toHaveProperty("trace");
});

it("appends all of a change's events in the write that makes the change, and none when the write matches nothing", async () => {
  const tenant = newTenant();
  const doc = thing(tenant);
  await t.things.insertOne(doc);
  const request = { requestId: null, idempotencyKey: null };
  const events: ThingEvent[] = [
    newEvent("thing.changed", tenant, { n: 1, color: "red" }, request),
    newEvent("thing.changed", tenant, { n: 1, color: "blue" }, request),
  ];
  await t.things.updateOne({ _id: doc._id }, { $set: { n: 1 }, ...pushEvents(events) });
  // A write whose filter fails records nothing: the event exists only with its change.
  await t.things.updateOne(
    { _id: doc._id, version: 99 },
    { $set: { n: 2 }, ...pushEvents([newEvent("thing.changed", tenant, { n: 2, color: "red" }, request)]) },
  );
  const stored = (await t.things.findOne({ _id: doc._id }))!;
  expect(stored.n).toBe(1);
  expect(stored.pending_events.map((e) => e._id)).toEqual(events.map((e) => e._id));
  // No events: no $push at all (the update then names only the change itself).
  expect(pushEvents([])).toEqual({});
});
