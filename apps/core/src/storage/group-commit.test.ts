import type { Collection } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { thingsCollection } from "../testutil/storage.js";
import { GroupCommit } from "./group-commit.js";

interface Row {
  _id: string;
  n: number;
}

let t: Awaited<ReturnType<typeof thingsCollection>>;
let rows: Collection<Row>;
beforeAll(async () => {
  t = await thingsCollection();
  rows = t.db.collection<Row>("group_commit_rows");
});
afterAll(() => t.close());

/** A group commit inserting rows with one insertMany per flush, answering each row's id; `seen` records each flush's size. */
function inserter(seen: number[], options: { windowMs?: number; maxBatch?: number } = {}) {
  return new GroupCommit<Row, string>({
    ...options,
    async flush(items) {
      seen.push(items.length);
      await rows.insertMany(items.map((r) => ({ ...r })));
      return items.map((r) => r._id);
    },
  });
}

it("writes what many callers add at once in one insert, and answers each caller its own result", async () => {
  const seen: number[] = [];
  const group = inserter(seen);
  const answers = await Promise.all(Array.from({ length: 50 }, (_, n) => group.add({ _id: `together-${n}`, n })));
  expect(answers).toEqual(Array.from({ length: 50 }, (_, n) => `together-${n}`));
  expect(seen).toEqual([50]);
  expect(await rows.countDocuments({ _id: { $regex: /^together-/ } })).toBe(50);
});

it("items added while a flush is under way go together in the next one, none waits for company when nothing is under way", async () => {
  const seen: number[] = [];
  const group = inserter(seen);
  const first = group.add({ _id: "wave-0", n: 0 });
  // These come once the first flush has started, while it is in the database.
  while (seen.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  const rest = Array.from({ length: 9 }, (_, i) => group.add({ _id: `wave-${i + 1}`, n: i + 1 }));
  await Promise.all([first, ...rest]);
  expect(seen).toEqual([1, 9]);
  // Alone, later: flushed alone, at once.
  await group.add({ _id: "wave-alone", n: 10 });
  expect(seen).toEqual([1, 9, 1]);
});

it("a flush holds at most maxBatch items; the rest go in the flushes after it", async () => {
  const seen: number[] = [];
  const group = inserter(seen, { maxBatch: 4 });
  await Promise.all(Array.from({ length: 10 }, (_, n) => group.add({ _id: `capped-${n}`, n })));
  expect(seen.reduce((a, b) => a + b, 0)).toBe(10);
  expect(Math.max(...seen)).toBeLessThanOrEqual(4);
  expect(await rows.countDocuments({ _id: { $regex: /^capped-/ } })).toBe(10);
});

it("a failed flush fails every caller in it, and only them", async () => {
  const seen: number[] = [];
  const group = inserter(seen);
  await rows.insertOne({ _id: "taken", n: 0 });
  // insertMany is ordered here: the duplicate stops the flush and it fails as a whole.
  const failing = [group.add({ _id: "taken", n: 1 }), group.add({ _id: "after-taken", n: 2 })];
  const results = await Promise.allSettled(failing);
  expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
  expect(await group.add({ _id: "later", n: 3 })).toBe("later");
});

it("idle resolves once everything added has been written", async () => {
  const seen: number[] = [];
  const group = inserter(seen, { windowMs: 20 });
  for (let n = 0; n < 5; n++) void group.add({ _id: `idle-${n}`, n });
  await group.idle();
  expect(await rows.countDocuments({ _id: { $regex: /^idle-/ } })).toBe(5);
  expect(seen).toEqual([5]);
});
