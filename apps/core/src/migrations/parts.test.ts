import type { Document } from "mongodb";
import { expect, it } from "vitest";
import { useTestDatabase } from "../testutil/database.js";
import { dropIndexes, walkDocuments } from "./parts.js";

const t = useTestDatabase("migration_parts");

it("drops the named indexes a collection has, leaves the others, and finds nothing to do on a collection that does not exist", async () => {
  const things = t.db.collection("things");
  await things.createIndex({ color: 1 }, { name: "retired" });
  await things.createIndex({ size: 1 }, { name: "kept" });
  const part = dropIndexes("things", ["retired", "never_made"]);
  expect(await part.pending(t.db)).toBe("things: drop index retired");
  expect(await part.batch(t.db, null, 500)).toEqual({ after: null, changed: 1 });
  expect((await things.listIndexes().toArray()).map((index) => index.name).sort()).toEqual(["_id_", "kept"]);
  expect(await part.pending(t.db)).toBeNull();
  expect(await dropIndexes("absent", ["retired"]).batch(t.db, null, 500)).toEqual({ after: null, changed: 0 });
});

it("does not wait behind a transaction left open on the collection when there is nothing to drop", async () => {
  // What a SIGKILLed core leaves: a transaction the server reaps only at its 60 s lifetime. A core starting meanwhile
  // must not queue for the collection's exclusive lock (dropIndexes takes it before it finds nothing to drop).
  const things = t.db.collection<{ _id: string }>("open_transaction");
  await things.insertOne({ _id: "first" });
  const session = t.client.startSession();
  try {
    session.startTransaction();
    await things.insertOne({ _id: "in-transaction" }, { session });
    await dropIndexes("open_transaction", ["retired"]).batch(t.db, null, 500);
    // Had the drop waited for the transaction, the server would have aborted it (no commit possible) or the test's
    // time would have run out first.
    expect(session.inTransaction()).toBe(true);
    await session.commitTransaction();
    expect(await things.countDocuments()).toBe(2);
  } finally {
    await session.endSession();
  }
});

it("walks a collection in bounded batches by _id: each batch reads at most its size of index keys and writes only the old shape", async () => {
  const walked = t.db.collection<Document>("walked");
  // 2,000 documents, of which every fourth has the old shape.
  const shape = (i: number) => (i % 4 === 0 ? { old: true } : { new: true });
  await walked.insertMany(Array.from({ length: 2_000 }, (_, i) => ({ _id: `d_${String(i).padStart(5, "0")}` as never, ...shape(i) })));
  const part = walkDocuments({ collection: "walked", where: { old: true }, what: "old documents", update: { $set: { new: true }, $unset: { old: "" } } });
  expect(await part.pending(t.db)).toBe("walked: 500 old documents");

  const positions: unknown[] = [];
  let after: unknown = null;
  let changed = 0;
  do {
    const batch = await part.batch(t.db, after, 300);
    changed += batch.changed;
    after = batch.after;
    positions.push(after);
  } while (after !== null);
  expect(changed).toBe(500);
  expect(positions).toEqual(["d_00299", "d_00599", "d_00899", "d_01199", "d_01499", "d_01799", null]);
  expect(await walked.countDocuments({ old: true })).toBe(0);
  expect(await part.pending(t.db)).toBeNull();

  // The shapes of a batch, explained on the server: the ids by the _id index alone, then one update over that range.
  const ids = await walked.find({ _id: { $gt: "d_00299" } } as never, { projection: { _id: 1 }, sort: { _id: 1 }, limit: 300 }).explain("executionStats");
  const stats = ids["executionStats"] as { totalKeysExamined: number; totalDocsExamined: number; nReturned: number };
  console.log(`a batch's id read: ${stats.nReturned} ids, ${stats.totalKeysExamined} keys and ${stats.totalDocsExamined} documents examined`);
  expect(stats.nReturned).toBe(300);
  expect(stats.totalKeysExamined).toBeLessThanOrEqual(301);
  expect(stats.totalDocsExamined).toBe(0);
  const oneBatch = { q: { $and: [{ _id: { $gte: "d_00300", $lte: "d_00599" } }, { old: true }] }, u: { $set: { new: true } }, multi: true };
  const update = await t.db.command({
    explain: { update: "walked", updates: [oneBatch] },
    verbosity: "executionStats",
  });
  const examined = (update["executionStats"] as { totalDocsExamined: number }).totalDocsExamined;
  console.log(`a batch's update: ${examined} documents examined for a range of 300 ids`);
  expect(examined).toBeLessThanOrEqual(300);
});
