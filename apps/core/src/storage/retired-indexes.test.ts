import { expect, it } from "vitest";
import { useTestDatabase } from "../testutil/database.js";
import { dropRetiredIndexes } from "@rms/proto";

const t = useTestDatabase("retired_indexes");

it("drops a retired index that is there, and leaves alone a collection that does not exist", async () => {
  const things = t.db.collection("things");
  await things.createIndex({ color: 1 }, { name: "retired" });
  await things.createIndex({ size: 1 }, { name: "kept" });
  await dropRetiredIndexes(things, ["retired", "never_made"]);
  expect((await things.listIndexes().toArray()).map((index) => index.name).sort()).toEqual(["_id_", "kept"]);
  await dropRetiredIndexes(t.db.collection("absent"), ["retired"]);
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
    await dropRetiredIndexes(things, ["retired"]);
    // Had the drop waited for the transaction, the server would have aborted it (no commit possible) or the test's
    // time would have run out first.
    expect(session.inTransaction()).toBe(true);
    await session.commitTransaction();
    expect(await things.countDocuments()).toBe(2);
  } finally {
    await session.endSession();
  }
});
