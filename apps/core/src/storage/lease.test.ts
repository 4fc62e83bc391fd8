import type { Collection } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { thingsCollection } from "../testutil/storage.js";
import { LeaseQueue, type Leased } from "./lease.js";

interface Work extends Leased {
  _id: string;
  queue: string;
  done?: boolean;
  step?: number;
}

let t: Awaited<ReturnType<typeof thingsCollection>>;
let work: Collection<Work>;
beforeAll(async () => {
  t = await thingsCollection();
  work = t.db.collection<Work>("work");
});
afterAll(() => t.close());

let clock = 1_000_000;
const now = () => clock;
const queue = (owner: string) => new LeaseQueue(work, { owner, leaseMs: 1_000, now });

it("gives each document to one claimer at a time, however many race for it", async () => {
  await work.insertMany(Array.from({ length: 5 }, (_, i) => ({ _id: `race-${i}`, queue: "race" })));
  const claimers = Array.from({ length: 20 }, (_, i) => queue(`w${i}`));
  const claimed = await Promise.all(claimers.map((q) => q.claim({ queue: "race" })));
  const ids = claimed.flatMap((doc) => (doc ? [doc._id] : []));
  expect(ids.sort()).toEqual(["race-0", "race-1", "race-2", "race-3", "race-4"]);
  expect(claimed.filter((doc) => doc).every((doc) => doc!.epoch === 1)).toBe(true);
});

it("lets another worker take an expired lease, and fences the first one's writes by the epoch", async () => {
  await work.insertOne({ _id: "takeover", queue: "takeover" });
  const first = queue("first");
  const second = queue("second");
  const mine = (await first.claim({ queue: "takeover" }))!;
  expect(await second.claim({ queue: "takeover" })).toBeNull(); // still held
  expect(await first.update(mine._id, mine.epoch!, { $set: { step: 1 } })).toBe(true);

  clock += 1_001; // the first worker stopped renewing
  const theirs = (await second.claim({ queue: "takeover" }))!;
  expect(theirs.epoch).toBe(mine.epoch! + 1);
  expect(theirs.step).toBe(1); // continues from the checkpoint
  expect(await first.update(mine._id, mine.epoch!, { $set: { step: 99 } })).toBe(false);
  expect(await first.renew(mine._id, mine.epoch!)).toBe(false);
  expect(await first.release(mine._id, mine.epoch!, { $set: { done: true } })).toBe(false);
  expect(await second.update(theirs._id, theirs.epoch!, { $set: { step: 2 } })).toBe(true);
  const stored = (await work.findOne({ _id: "takeover" }))!;
  expect([stored.step, stored.done, stored.lease_owner]).toEqual([2, undefined, "second"]);
});

it("renewal keeps a lease past its first expiry; release frees it at once with the final write", async () => {
  await work.insertOne({ _id: "renew", queue: "renew" });
  const holder = queue("holder");
  const other = queue("other");
  const mine = (await holder.claim({ queue: "renew" }))!;
  clock += 900;
  expect(await holder.renew(mine._id, mine.epoch!)).toBe(true);
  clock += 900; // past the claim's expiry, within the renewal's
  expect(await other.claim({ queue: "renew" })).toBeNull();
  expect(await holder.release(mine._id, mine.epoch!, { $set: { done: true } })).toBe(true);
  const next = (await other.claim({ queue: "renew" }))!;
  expect([next.done, next.epoch, next.lease_owner]).toEqual([true, mine.epoch! + 1, "other"]);
});

it("claims in the order asked for, and only what the filter matches", async () => {
  await work.insertMany([
    { _id: "order-b", queue: "order", step: 2 },
    { _id: "order-a", queue: "order", step: 1 },
    { _id: "order-x", queue: "order", done: true },
  ]);
  const q = queue("orderly");
  const picked = [];
  for (
    let doc = await q.claim({ queue: "order", done: { $ne: true } }, { step: 1 });
    doc;
    doc = await q.claim({ queue: "order", done: { $ne: true } }, { step: 1 })
  ) {
    picked.push(doc._id);
  }
  expect(picked).toEqual(["order-a", "order-b"]);
});

it("claimMany leases several free documents in one write, earliest first; racing claims each win their own", async () => {
  await work.insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: `many-${String(i).padStart(2, "0")}`, queue: "many", step: i })));
  const first = await queue("many-1").claimMany({ queue: "many" }, { step: 1 }, 5, "claim-1");
  expect(first.map((d) => d._id)).toEqual(["many-00", "many-01", "many-02", "many-03", "many-04"]);
  expect(first.every((d) => d.epoch === 1 && d.lease_owner === "many-1")).toBe(true);
  const racing = await Promise.all(Array.from({ length: 6 }, (_, i) => queue(`racer-${i}`).claimMany({ queue: "many" }, { step: 1 }, 10, `race-${i}`)));
  const won = racing.flat().map((d) => d._id);
  expect(new Set(won).size).toBe(won.length);
  expect(won).not.toContain("many-00");
  // Everything free was taken by someone, nothing twice.
  expect(won.length).toBeLessThanOrEqual(25);
  expect(await work.countDocuments({ queue: "many", lease_owner: { $ne: null } })).toBe(5 + won.length);
});

it("claimMany that finds one free document leases it with one findAndModify: of racing claims one wins it, with the new epoch and its token", async () => {
  await work.insertOne({ _id: "lone-0", queue: "lone", step: 0 });
  const racing = await Promise.all(Array.from({ length: 4 }, (_, i) => queue(`lone-racer-${i}`).claimMany({ queue: "lone" }, { step: 1 }, 10, `lone-${i}`)));
  const won = racing.flat();
  expect(won).toHaveLength(1);
  expect(won[0]).toMatchObject({ _id: "lone-0", epoch: 1, lease_owner: `lone-racer-${racing.findIndex((r) => r.length === 1)}` });
  expect(won[0]!.lease_token).toBe(`lone-${racing.findIndex((r) => r.length === 1)}`);
  expect(await work.findOne({ _id: "lone-0" })).toMatchObject({ epoch: 1 });
});
