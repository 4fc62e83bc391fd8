// What the project relies on from the database, checked on whatever engine the tests run on
// (RMS_TEST_DB_ENGINE=… to pick one). Where an engine deviates from MongoDB, the test asserts the
// engine's actual behaviour and README.md ("Engine deviations from MongoDB") records it.
import type {} from "./vitest-setup.js";
import { MongoClient, type Collection, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { testDatabaseName } from "./names.js";

const engine = inject("mongoEngine");
/** Engines that are real MongoDB (external is assumed to be). */
const isMongoDb = engine === "mongod" || engine === "testcontainers" || engine === "external";

let client: MongoClient;
let n = 0;
const dbName = testDatabaseName("features");
const fresh = (): Collection<Document> => client.db(dbName).collection(`c${n++}`);
const id = (s: string | number): never => s as never;

beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri")).connect();
});
afterAll(async () => {
  await client.db(dbName).dropDatabase();
  await client.close();
});

describe(`engine features the project uses (${engine})`, () => {
  it("findOneAndUpdate with upsert and returnDocument after, $setOnInsert, $inc", async () => {
    const c = fresh();
    const options = { upsert: true, returnDocument: "after" } as const;
    expect(await c.findOneAndUpdate({ _id: id("x") }, { $setOnInsert: { a: 1 }, $inc: { n: 1 } }, options)).toEqual({ _id: "x", a: 1, n: 1 });
    expect(await c.findOneAndUpdate({ _id: id("x") }, { $setOnInsert: { a: 2 }, $inc: { n: 1 } }, options)).toEqual({ _id: "x", a: 1, n: 2 });
  });

  it("compound unique indexes reject duplicates with code 11000", async () => {
    const c = fresh();
    await c.createIndex({ account: 1, key: 1 }, { unique: true });
    await c.insertOne({ account: "a", key: "k" });
    await expect(c.insertOne({ account: "a", key: "k" })).rejects.toMatchObject({ code: 11000 });
    await c.insertOne({ account: "b", key: "k" });
    await c.insertOne({ account: "a", key: "l" });
    expect(await c.countDocuments()).toBe(3);
  });

  it("$push and $pull on arrays of subdocuments (FerretDB 1.x: $pull removes exact whole elements only)", async () => {
    const c = fresh();
    const pulled = async (condition: Document): Promise<unknown> => {
      await c.replaceOne({ _id: id("r") }, { events: [] }, { upsert: true });
      await c.updateOne({ _id: id("r") }, { $push: { events: { _id: "e1", t: 1 } } } as never);
      await c.updateOne({ _id: id("r") }, { $push: { events: { _id: "e2", t: 2 } } } as never);
      await c.updateOne({ _id: id("r") }, { $pull: { events: condition } } as never);
      return (await c.findOne({ _id: id("r") }))?.events;
    };
    const both = [{ _id: "e1", t: 1 }, { _id: "e2", t: 2 }];
    const second = [{ _id: "e2", t: 2 }];
    // The whole element, fields in stored order: removed everywhere.
    expect(await pulled({ _id: "e1", t: 1 })).toEqual(second);
    // A condition on some fields (MongoDB treats the value as a query on each element).
    const partial = [await pulled({ _id: "e1" }), await pulled({ t: { $lt: 2 } })];
    if (engine === "ferretdb") expect(partial).toEqual([both, both]);
    else expect(partial).toEqual([second, second]);
  });

  it("$elemMatch on arrays of {k, v} pairs (FerretDB 1.x: refused); $all: [{k, v}] works everywhere", async () => {
    const c = fresh();
    await c.insertOne({ _id: id("r"), metadata: [{ k: "$where", v: "1" }, { k: "a.b", v: "2" }] });
    const outcome = await c.countDocuments({ metadata: { $elemMatch: { k: "a.b", v: "2" } } }).then(
      (count) => `count ${count}`,
      (e: Error) => e.message,
    );
    if (engine === "ferretdb") expect(outcome).toBe("unknown operator: k");
    else expect(outcome).toBe("count 1");
    // The portable way to match one pair (pairs are always stored with k before v).
    expect(await c.countDocuments({ metadata: { $all: [{ k: "a.b", v: "2" }] } })).toBe(1);
    expect(await c.countDocuments({ metadata: { $all: [{ k: "a.b", v: "other" }] } })).toBe(0);
    expect(await c.countDocuments({ metadata: { $all: [{ k: "$where", v: "1" }] } })).toBe(1);
  });

  it("sorts base62 string _ids byte-wise (desc) and ranges over them with $lt / $gt", async () => {
    const c = fresh();
    const ids = ["res_0AbC9", "res_0abC9", "res_0ZzZ0", "res_0000", "res_z000", "res_Z000", "res_9zz", "res_A00"];
    await c.insertMany(ids.map((s) => ({ _id: id(s) })));
    const bytewise = [...ids].sort(); // JS string order = byte order for ASCII: 0-9 < A-Z < a-z
    const found = async (filter: Document, dir: 1 | -1): Promise<unknown[]> => (await c.find(filter, { sort: { _id: dir } }).toArray()).map((d) => d._id);
    expect(await found({}, -1)).toEqual([...bytewise].reverse());
    expect(await found({ _id: { $lt: "res_0abC9" } }, -1)).toEqual(bytewise.filter((s) => s < "res_0abC9").reverse());
    expect(await found({ _id: { $gt: "res_0abC9" } }, 1)).toEqual(bytewise.filter((s) => s > "res_0abC9"));
    expect(await c.find({ _id: { $lt: id("res_Z000") } }, { sort: { _id: -1 }, limit: 2 }).toArray()).toEqual([{ _id: "res_A00" }, { _id: "res_9zz" }]);
  });

  it("$ne, $in, $exists, $unset, conditional updateOne (modifiedCount), bulkWrite, deleteMany by $lt, countDocuments", async () => {
    const c = fresh();
    await c.insertMany([
      { _id: id(1), s: "a", v: 0, t: 10 },
      { _id: id(2), s: "b", v: 0, t: 20, gone: true },
    ]);
    expect(await c.countDocuments({ s: { $ne: "a" } })).toBe(1);
    expect(await c.countDocuments({ s: { $in: ["a", "b"] } })).toBe(2);
    expect(await c.countDocuments({ gone: { $exists: false } })).toBe(1);
    expect((await c.updateOne({ _id: id(1), v: 0 }, { $inc: { v: 1 } })).modifiedCount).toBe(1);
    expect((await c.updateOne({ _id: id(1), v: 0 }, { $inc: { v: 1 } })).modifiedCount).toBe(0);
    await c.updateOne({ _id: id(2) }, { $unset: { gone: "" } });
    expect(await c.countDocuments({ gone: { $exists: true } })).toBe(0);
    const bulk = await c.bulkWrite([
      { insertOne: { document: { _id: id(3), t: 5 } } },
      { updateOne: { filter: { _id: id(2) }, update: { $set: { s: "c" } } } },
      { updateOne: { filter: { _id: id(4) }, update: { $setOnInsert: { t: 1 } }, upsert: true } },
    ]);
    expect([bulk.insertedCount, bulk.modifiedCount, bulk.upsertedCount]).toEqual([1, 1, 1]);
    expect((await c.deleteMany({ t: { $lt: 15 } })).deletedCount).toBe(3);
    expect(await c.countDocuments()).toBe(1);
  });

  it("inserts under a unique index and deleteOne are atomic under concurrency (the primitives exactly-once work is built on)", async () => {
    const c = fresh();
    await c.createIndex({ key: 1 }, { unique: true });
    const inserts = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => c.insertOne({ _id: id(`i${i}`), key: "same" })));
    expect(inserts.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    await c.insertOne({ _id: id("d"), key: "other" });
    const deletes = await Promise.all(Array.from({ length: 10 }, () => c.deleteOne({ _id: id("d") })));
    expect(deletes.filter((d) => d.deletedCount === 1)).toHaveLength(1);
  });

  it("conditional updateOne under concurrency: exactly one winner on MongoDB (FerretDB 1.x: possibly several)", async () => {
    const c = fresh();
    await c.insertOne({ _id: id("doc"), version: 0 });
    // 20 separate connections, so the updates really run in parallel on the server.
    const clients = await Promise.all(Array.from({ length: 20 }, () => new MongoClient(inject("mongoUri")).connect()));
    try {
      const results = await Promise.all(clients.map((cl) => cl.db(dbName).collection(c.collectionName).updateOne({ _id: id("doc"), version: 0 }, { $inc: { version: 1 } })));
      const winners = results.filter((r) => r.modifiedCount === 1).length;
      const final = (await c.findOne({ _id: id("doc") }))?.version;
      if (engine === "ferretdb") {
        // Read-modify-write without a compare-and-set: every winner wrote version 1.
        expect(winners).toBeGreaterThanOrEqual(1);
        expect(final).toBe(1);
      } else {
        expect({ winners, final }).toEqual({ winners: 1, final: 1 });
      }
    } finally {
      await Promise.all(clients.map((cl) => cl.close()));
    }
  });
});
