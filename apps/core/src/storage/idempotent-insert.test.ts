import { afterAll, beforeAll, expect, it } from "vitest";
import { newTenant, thing, thingsCollection, type ThingDocument } from "../testutil/storage.js";
import { GATEWAY_IDEMPOTENCY_COLLECTION } from "@rms/proto";
import { newId } from "../ids.js";
import { ensureExpiryIndex } from "./expiry.js";
import { gatewayHoldsKey } from "./gateway-records.js";
import { ensureIdempotencyIndex, fingerprint, IDEMPOTENCY_RETENTION_MS, insertOnce, recordRefusal, type RecordedAnswer } from "./idempotent-insert.js";

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

// ---- The answer recorded in the key's slot (docs/idempotency-and-limits.md, "The create's answer in the key's slot")

/** What the gateway asks to record with a create: its fingerprint of the request and its headers, and this request's id. */
const answer = (callerFingerprint: string, requestId: string): RecordedAnswer => ({
  fingerprint: callerFingerprint,
  request_id: requestId,
  headers: '[{"name":"Content-Type","value":"application/json; charset=utf-8"}]',
  shown: { n: 1 },
});

it("with an answer: many concurrent identical requests make one document; each other one gets the first's answer, or in-flight before it is committed", async () => {
  const tenant = newTenant();
  const results = await Promise.all(
    Array.from({ length: 16 }, (_, i) =>
      insertOnce(t.things, fresh(tenant), { tenant, key: "answered", fingerprint: fingerprint(["same"]), answer: answer("fp-same", `req_${i}`) }),
    ),
  );
  const made = results.filter((r) => "replayed" in r && !r.replayed);
  expect(made).toHaveLength(1);
  const firstId = "doc" in made[0]! ? made[0].doc._id : "";
  const firstRequest = "doc" in made[0]! ? made[0].doc.answer?.request_id : "";
  for (const r of results) {
    // Never a conflict, never a second document: the first's answer (its request id) or 409 in-flight.
    expect("conflict" in r).toBe(false);
    if ("doc" in r) expect([r.doc._id, r.doc.answer?.request_id]).toEqual([firstId, firstRequest]);
    else expect(r).toEqual({ inFlight: true });
  }
  expect(await t.things.countDocuments({ account: tenant.account })).toBe(1);
});

it("with an answer: another request under the key is a conflict by the caller's fingerprint, even with the same fields", async () => {
  const tenant = newTenant();
  await insertOnce(t.things, fresh(tenant), { tenant, key: "by-caller", fingerprint: fingerprint(["fields"]), answer: answer("fp-post-a", "req_a") });
  // Same fields (the store's fingerprint), another request for the caller (e.g. another path): refused.
  expect(await insertOnce(t.things, fresh(tenant), { tenant, key: "by-caller", fingerprint: fingerprint(["fields"]), answer: answer("fp-post-b", "req_b") })).toEqual({
    conflict: true,
  });
  expect(await t.things.countDocuments({ account: tenant.account })).toBe(1);
});

it("with an answer: a retry after a crash between the insert and the answer gets the answer the insert recorded", async () => {
  const tenant = newTenant();
  // The first attempt: its insert committed, and its process died before answering (its result is never seen).
  await insertOnce(t.things, fresh(tenant, 7), { tenant, key: "crashed", fingerprint: fingerprint(["c"]), answer: { ...answer("fp-c", "req_first"), shown: { n: 7 } } });
  const retry = await insertOnce(t.things, fresh(tenant, 8), { tenant, key: "crashed", fingerprint: fingerprint(["c"]), answer: answer("fp-c", "req_retry") });
  expect(retry).toMatchObject({ replayed: true, doc: { n: 7, answer: { request_id: "req_first", fingerprint: "fp-c", shown: { n: 7 } } } });
  expect(await t.things.countDocuments({ account: tenant.account })).toBe(1);
});

it("a refusal holds the key: its repeat gets the refusal back, another request is a conflict, no tenant read sees it, and it expires with the key's window", async () => {
  const tenant = newTenant();
  const refused = { type: "invalid_request_error", code: "string_too_long", message: "Name too long.", param: "name" };
  const first = await recordRefusal(t.things, newId("res"), { tenant, key: "refused", fingerprint: "", answer: { ...answer("fp-long", "req_refused"), refused } });
  expect(first).toEqual({ recorded: true });
  const again = await recordRefusal(t.things, newId("res"), { tenant, key: "refused", fingerprint: "", answer: { ...answer("fp-long", "req_again"), refused } });
  expect(again).toMatchObject({ replayed: true, doc: { answer: { request_id: "req_refused", refused } } });
  // The same key with a request core accepts (another fingerprint): a conflict, nothing created.
  expect(await insertOnce(t.things, fresh(tenant), { tenant, key: "refused", fingerprint: fingerprint(["ok"]), answer: answer("fp-ok", "req_ok") })).toEqual({ conflict: true });
  // Without the caller's fingerprint (an operator's call), the store's fingerprint differs from the refusal's (none): a conflict too.
  expect(await insertOnce(t.things, fresh(tenant), { tenant, key: "refused", fingerprint: fingerprint(["ok"]) })).toEqual({ conflict: true });
  expect(await t.things.countDocuments({ account: tenant.account })).toBe(0);
  const slot = await t.things.findOne({ idempotency: `${tenant.account}/test/refused` });
  expect(slot).toMatchObject({ deleted: true });
  expect(slot!.account).toBeUndefined();
  expect(slot!.expires_at!.getTime() - slot!.created * 1000).toBeGreaterThanOrEqual(IDEMPOTENCY_RETENTION_MS - 1_000);
});

it("knows a key the gateway holds a live record of (not one past its expiry)", async () => {
  const records = t.db.collection<{ _id: string; created: Date; expires_at?: Date }>(GATEWAY_IDEMPOTENCY_COLLECTION);
  const tenant = newTenant();
  const scope = (key: string) => `${tenant.account}/test/${key}`;
  const now = Date.now();
  await records.insertMany([
    { _id: scope("live"), created: new Date(now - 1_000), expires_at: new Date(now + 60_000) },
    { _id: scope("past"), created: new Date(now - 2 * IDEMPOTENCY_RETENTION_MS), expires_at: new Date(now - IDEMPOTENCY_RETENTION_MS) },
    { _id: scope("old-style"), created: new Date(now - 1_000) },
  ]);
  expect(await gatewayHoldsKey(t.db, scope("live"), now)).toBe(true);
  expect(await gatewayHoldsKey(t.db, scope("old-style"), now)).toBe(true);
  expect(await gatewayHoldsKey(t.db, scope("past"), now)).toBe(false);
  expect(await gatewayHoldsKey(t.db, scope("absent"), now)).toBe(false);
});
