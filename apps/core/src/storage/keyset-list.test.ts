import { afterAll, beforeAll, expect, it } from "vitest";
import { newTenant, thing, thingsCollection, type ThingDocument } from "../testutil/storage.js";
import { newId } from "../ids.js";
import { ensureKeysetIndexes, keysetIdRange, listPage, type CreatedRange } from "./keyset-list.js";
import { newEvent } from "./outbox.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
});
afterAll(() => t.close());

/** `count` things of the tenant, one millisecond apart, oldest first; every third is blue. */
async function seed(tenant: ReturnType<typeof newTenant>, count: number): Promise<ThingDocument[]> {
  const start = Date.now() - 60_000;
  const docs = Array.from({ length: count }, (_, i) => thing(tenant, { n: i, color: i % 3 === 0 ? "blue" : "red" }, start + i));
  for (const doc of docs) doc.pending_events = [newEvent("thing.created", tenant, { n: doc.n, color: doc.color }, { requestId: null, idempotencyKey: null })];
  await t.things.insertMany(docs);
  return docs;
}
const ids = (docs: { _id: string }[]) => docs.map((d) => d._id);

it("pages newest first after a cursor and, backwards, before one, with hasMore on both sides", async () => {
  const tenant = newTenant();
  const docs = (await seed(tenant, 10)).reverse(); // newest first
  const first = await listPage(t.things, tenant, { limit: 4 });
  expect(ids(first.items)).toEqual(ids(docs.slice(0, 4)));
  expect(first.hasMore).toBe(true);
  const second = await listPage(t.things, tenant, { limit: 4, startingAfter: first.items.at(-1)!._id });
  expect(ids(second.items)).toEqual(ids(docs.slice(4, 8)));
  const last = await listPage(t.things, tenant, { limit: 4, startingAfter: second.items.at(-1)!._id });
  expect(ids(last.items)).toEqual(ids(docs.slice(8)));
  expect(last.hasMore).toBe(false);
  // Backwards from the last page: the page just newer than it, still newest first.
  const back = await listPage(t.things, tenant, { limit: 4, endingBefore: last.items[0]!._id });
  expect(ids(back.items)).toEqual(ids(docs.slice(4, 8)));
  expect(back.hasMore).toBe(true);
  const top = await listPage(t.things, tenant, { limit: 4, endingBefore: docs[3]!._id });
  expect(ids(top.items)).toEqual(ids(docs.slice(0, 3)));
  expect(top.hasMore).toBe(false);
});

it("filters by equality, leaves tombstones out, and keeps a tombstoned id usable as a cursor", async () => {
  const tenant = newTenant();
  const docs = (await seed(tenant, 9)).reverse();
  const cursor = docs[2]!;
  await t.things.updateOne({ _id: cursor._id }, { $set: { deleted: true } });
  const all = await listPage(t.things, tenant, { limit: 100 });
  expect(ids(all.items)).toEqual(ids(docs.filter((d) => d._id !== cursor._id)));
  const after = await listPage(t.things, tenant, { limit: 100, startingAfter: cursor._id });
  expect(ids(after.items)).toEqual(ids(docs.slice(3)));
  const blue = await listPage(t.things, tenant, { limit: 100, where: { color: "blue" } });
  // Blue are n = 0, 3, 6; n = 6 is the tombstone (third newest of nine).
  expect(cursor.color).toBe("blue");
  expect(blue.items.map((d) => d.n)).toEqual([3, 0]);
});

it("never shows another tenant's or the other mode's documents", async () => {
  const tenant = newTenant();
  await seed(tenant, 3);
  await seed({ ...tenant, livemode: true }, 2);
  await seed(newTenant(), 4);
  const page = await listPage(t.things, tenant, { limit: 100 });
  expect(page.items).toHaveLength(3);
  expect(page.items.every((d) => d.account === tenant.account && !d.livemode)).toBe(true);
  // Reads never load the outbox (each seeded document has one, in the database).
  expect(page.items.some((d) => "pending_events" in d)).toBe(false);
});

it("declares the tenant order index and one per equality filter", async () => {
  await ensureKeysetIndexes(t.things, ["color"]);
  const indexes = await t.things.listIndexes().toArray();
  expect(indexes.find((i) => i.name === "tenant_order")?.key).toEqual({ account: 1, livemode: 1, _id: -1 });
  expect(indexes.find((i) => i.name === "tenant_color_order")?.key).toEqual({ account: 1, livemode: 1, color: 1, _id: -1 });
});

it("a `created` range is the range of ids made in those seconds, bounds included as given, and it meets the cursor", () => {
  const s = 1_700_000_000;
  const made = (ms: number) => newId("evt", ms);
  const inRange = (id: string, range: Record<string, string> | undefined) =>
    (range?.["$gte"] === undefined || id >= range["$gte"]) &&
    (range?.["$gt"] === undefined || id > range["$gt"]) &&
    (range?.["$lt"] === undefined || id < range["$lt"]);
  const cases: [CreatedRange, number[], number[]][] = [
    [{ gte: s }, [s * 1000, s * 1000 + 999, (s + 5) * 1000], [s * 1000 - 1]],
    [{ gt: s }, [(s + 1) * 1000], [s * 1000 + 999]],
    [{ lt: s }, [s * 1000 - 1], [s * 1000]],
    [{ lte: s }, [s * 1000 + 999], [(s + 1) * 1000]],
    [{ gte: s, lte: s }, [s * 1000, s * 1000 + 999], [s * 1000 - 1, (s + 1) * 1000]],
    [{ gt: s, lt: s + 1 }, [], [s * 1000, (s + 1) * 1000]],
    [{ lte: Number.MAX_SAFE_INTEGER }, [s * 1000], []],
    [{ gte: Number.MAX_SAFE_INTEGER }, [], [s * 1000]],
  ];
  for (const [created, inside, outside] of cases) {
    const range = keysetIdRange("evt", {}, created);
    for (const ms of inside) expect(inRange(made(ms), range), `${JSON.stringify(created)} ${ms}`).toBe(true);
    for (const ms of outside) expect(inRange(made(ms), range), `${JSON.stringify(created)} ${ms}`).toBe(false);
  }
  // The cursor and the range together: the nearer upper bound stands.
  const cursor = made(s * 1000 + 500);
  expect(keysetIdRange("evt", { startingAfter: cursor }, { lt: s + 10 })).toEqual({ $lt: cursor });
  expect(keysetIdRange("evt", { startingAfter: made((s + 20) * 1000) }, { lt: s + 10 })).toEqual({ $lt: keysetIdRange("evt", {}, { lt: s + 10 })!["$lt"] });
  expect(keysetIdRange("evt", { endingBefore: cursor }, { gte: s })).toEqual({ $gt: cursor, $gte: keysetIdRange("evt", {}, { gte: s })!["$gte"] });
  expect(keysetIdRange("evt", {}, {})).toBeUndefined();
});
