// What the project relies on from the database, checked on whatever engine the tests run on.
// A failing check here is a finding about the engine: record it in docs/database.md.
import { MongoClient, type Collection, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { testDatabaseName } from "./names.js";

let client: MongoClient;
let n = 0;
const fresh = (): Collection<Document> => client.db(testDatabaseName("features")).collection(`c${n++}`);

beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri")).connect();
});
afterAll(() => client.close());

describe("engine features the project uses", () => {
  it("finds out whether $elemMatch on {k, v} pairs works (FerretDB 1.x: no, 'unknown operator')", async () => {
    const c = fresh();
    await c.insertOne({ metadata: [{ k: "a", v: "1" }] });
    const outcome = await c.countDocuments({ metadata: { $elemMatch: { k: "a", v: "1" } } }).then((count) => `count ${count}`, (e: Error) => e.message);
    // Real MongoDB answers "count 1"; FerretDB 1.x refuses the query. The project therefore never uses $elemMatch.
    expect(["count 1", "unknown operator: k"]).toContain(outcome);
  });

  it("findOneAndUpdate with upsert and returnDocument after", async () => {
    const c = fresh();
    const doc = await c.findOneAndUpdate({ _id: "x" as never }, { $setOnInsert: { a: 1 }, $inc: { n: 1 } }, { upsert: true, returnDocument: "after" });
    expect(doc).toEqual({ _id: "x", a: 1, n: 1 });
  });

  it("compound unique indexes reject duplicates with code 11000", async () => {
    const c = fresh();
    await c.createIndex({ account: 1, key: 1 }, { unique: true });
    await c.insertOne({ account: "a", key: "k" });
    await expect(c.insertOne({ account: "a", key: "k" })).rejects.toMatchObject({ code: 11000 });
    await c.insertOne({ account: "b", key: "k" });
  });

  it("$push, $pull, $elemMatch on arrays of {k, v} pairs and keys that look like operators", async () => {
    const c = fresh();
    await c.insertOne({ _id: "r" as never, metadata: [{ k: "$where", v: "1" }, { k: "a.b", v: "2" }], events: [] });
    await c.updateOne({ _id: "r" as never }, { $push: { events: { _id: "e1" } } as never });
    await c.updateOne({ _id: "r" as never }, { $pull: { events: { _id: "e1" } } as never });
    // Matching one {k, v} element: `$all: [{k, v}]` works on MongoDB and FerretDB alike.
    expect(await c.countDocuments({ metadata: { $all: [{ k: "a.b", v: "2" }] } })).toBe(1);
    expect(await c.countDocuments({ metadata: { $all: [{ k: "a.b", v: "other" }] } })).toBe(0);
    expect(await c.findOne({ _id: "r" as never })).toEqual({ _id: "r", metadata: [{ k: "$where", v: "1" }, { k: "a.b", v: "2" }], events: [] });
  });

  it("sorts string ids byte-wise and ranges over them with $lt/$gt", async () => {
    const c = fresh();
    const ids = ["res_0A", "res_0a", "res_0Z", "res_00", "res_z0", "res_Z0"];
    await c.insertMany(ids.map((_id) => ({ _id: _id as never })));
    const sorted = [...ids].sort();
    expect((await c.find({}, { sort: { _id: -1 } }).toArray()).map((d) => d._id)).toEqual([...sorted].reverse());
    expect((await c.find({ _id: { $lt: "res_0a" as never } }, { sort: { _id: -1 } }).toArray()).map((d) => d._id)).toEqual(sorted.filter((s) => s < "res_0a").reverse());
    expect((await c.find({ _id: { $gt: "res_0a" as never } }, { sort: { _id: 1 } }).toArray()).map((d) => d._id)).toEqual(sorted.filter((s) => s > "res_0a"));
  });

  it("$ne, $in, $exists, $unset, conditional updateOne with modifiedCount, bulkWrite, deleteMany by $lt, countDocuments", async () => {
    const c = fresh();
    await c.insertMany([{ _id: 1 as never, s: "a", v: 0, t: 10 }, { _id: 2 as never, s: "b", v: 0, t: 20, gone: true }]);
    expect(await c.countDocuments({ s: { $ne: "a" } })).toBe(1);
    expect(await c.countDocuments({ s: { $in: ["a", "b"] } })).toBe(2);
    expect(await c.countDocuments({ gone: { $exists: false } })).toBe(1);
    expect((await c.updateOne({ _id: 1 as never, v: 0 }, { $inc: { v: 1 } })).modifiedCount).toBe(1);
    expect((await c.updateOne({ _id: 1 as never, v: 0 }, { $inc: { v: 1 } })).modifiedCount).toBe(0);
    await c.updateOne({ _id: 2 as never }, { $unset: { gone: "" } });
    expect(await c.countDocuments({ gone: { $exists: true } })).toBe(0);
    const bulk = await c.bulkWrite([{ insertOne: { document: { _id: 3 as never, t: 5 } } }, { updateOne: { filter: { _id: 2 as never }, update: { $set: { s: "c" } } } }]);
    expect(bulk.insertedCount + bulk.modifiedCount).toBe(2);
    expect((await c.deleteMany({ t: { $lt: 15 } })).deletedCount).toBe(2);
  });

  it("inserts and deleteOne are atomic under concurrency (the primitives exactly-once work is built on)", async () => {
    const c = fresh();
    await c.createIndex({ key: 1 }, { unique: true });
    const inserts = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => c.insertOne({ _id: `i${i}` as never, key: "same" })));
    expect(inserts.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    await c.insertOne({ _id: "d" as never, key: "other" });
    const deletes = await Promise.all(Array.from({ length: 10 }, () => c.deleteOne({ _id: "d" as never })));
    expect(deletes.filter((d) => d.deletedCount === 1)).toHaveLength(1);
  });
});
