import { afterAll, beforeAll, expect, it } from "vitest";
import { newTenant, thing, thingsCollection, type ThingDocument } from "../testutil/storage.js";
import { ensureExpiryIndex } from "./expiry.js";
import { ensureIdempotencyIndex, fingerprint, IDEMPOTENCY_RETENTION_MS, insertOnce } from "./idempotent-insert.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
  await ensureIdempotencyIndex(t.things);
  await ensureExpiryIndex(t.things);
});
afterAll(() => t.close());

const fresh = (tenant: ReturnType<typeof newTenant>, n = 1) => {
  const { idempotency: _i, request_hash: _h, ...doc } = thing(tenant, { n });
  return doc;
};

it("without a key, inserts every time, each document holding its own id in the unique slot", async () => {
  const tenant = newTenant();
  const a = await insertOnce(t.things, fresh(tenant), { tenant, key: null, fingerprint: fingerprint([1]) });
  const b = await insertOnce(t.things, fresh(tenant), { tenant, key: null, fingerprint: fingerprint([1]) });
  expect(a).toMatchObject({ replayed: false });
  expect(b).toMatchObject({ replayed: false });
  const stored = await t.things.find({ account: tenant.account }).toArray();
  expect(stored.map((d) => [d.idempotency, d.request_hash])).toEqual(stored.map((d) => [d._id, null]));
});

it("under one key, many concurrent inserts make one document and all of them get it", async () => {
  const tenant = newTenant();
  const results = await Promise.all(Array.from({ length: 12 }, () => insertOnce(t.things, fresh(tenant), { tenant, key: "k-1", fingerprint: fingerprint(["same"]) })));
  const docs = results.map((r) => ("doc" in r ? r.doc._id : "conflict"));
  expect(new Set(docs).size).toBe(1);
  expect(results.filter((r) => "replayed" in r && !r.replayed)).toHaveLength(1);
  expect(await t.things.countDocuments({ account: tenant.account })).toBe(1);
});

it("refuses the key with a different request (conflict), writing nothing", async () => {
  const tenant = newTenant();
  await insertOnce(t.things, fresh(tenant, 1), { tenant, key: "k-2", fingerprint: fingerprint(["first"]) });
  expect(await insertOnce(t.things, fresh(tenant, 2), { tenant, key: "k-2", fingerprint: fingerprint(["second"]) })).toEqual({ conflict: true });
  expect((await t.things.find({ account: tenant.account }).toArray()).map((d) => d.n)).toEqual([1]);
});

it("scopes a key to its account and mode", async () => {
  const test = newTenant(false);
  const live = { ...test, livemode: true };
  const other = newTenant(false);
  const ids = [];
  for (const tenant of [test, live, other]) {
    const result = await insertOnce(t.things, fresh(tenant), { tenant, key: "shared", fingerprint: fingerprint(["x"]) });
    ids.push("doc" in result && !result.replayed ? result.doc._id : null);
  }
  expect(new Set(ids).size).toBe(3);
  expect(ids).not.toContain(null);
});

it("releases a key once its retention window is over, and binds it to the new document", async () => {
  const tenant = newTenant();
  const hash = fingerprint(["daily"]);
  const first = await insertOnce(t.things, fresh(tenant), { tenant, key: "daily", fingerprint: hash });
  const firstId = "doc" in first ? first.doc._id : "";
  const createdMs = ((await t.things.findOne({ _id: firstId })) as ThingDocument).created * 1000;
  // One second before the window closes: still the first document.
  const before = await insertOnce(t.things, fresh(tenant), { tenant, key: "daily", fingerprint: hash }, undefined, () => createdMs + IDEMPOTENCY_RETENTION_MS - 1_000);
  expect(before).toMatchObject({ replayed: true, doc: { _id: firstId } });
  expect("doc" in before && "pending_events" in before.doc).toBe(false);
  // Past it: a new document, which the key now names; the old one keeps its data under its own id.
  const after = await insertOnce(t.things, fresh(tenant), { tenant, key: "daily", fingerprint: hash }, undefined, () => createdMs + IDEMPOTENCY_RETENTION_MS);
  expect(after).toMatchObject({ replayed: false });
  const secondId = "doc" in after ? after.doc._id : "";
  expect(secondId).not.toBe(firstId);
  expect((await t.things.findOne({ _id: firstId }))!.idempotency).toBe(firstId);
  expect((await t.things.findOne({ _id: secondId }))!.idempotency).toBe(`${tenant.account}/test/daily`);
});

it("fingerprints equal values equally and different ones differently", () => {
  expect(fingerprint(["a", [["k", "v"]]])).toBe(fingerprint(["a", [["k", "v"]]]));
  expect(fingerprint(["a", [["k", "v"]]])).not.toBe(fingerprint(["a", [["k", "w"]]]));
});
