// What the project relies on from the database, checked on every engine the launcher can start here:
// the package's shared test server (whatever the launcher chose, RMS_DB_ENGINE=… picks another) and
// mongo-java-server on both of its storages (in memory, H2 file). Where an engine deviates from
// MongoDB, the test asserts the engine's actual behaviour and docs/database.md records it by test name.
import type {} from "./vitest-setup.js";
import { execFileSync } from "node:child_process";
import { Binary, MongoClient, type Collection, type Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { testDatabaseName } from "./names.js";
import type { MongoJavaServerStorage } from "./mongo-java-server.js";
import { startDatabase, type Engine } from "./start.js";

interface Target {
  readonly engine: Engine;
  readonly storage: MongoJavaServerStorage | null;
  /** A running server's URI and how to stop it (the shared one is stopped by the global setup). */
  start(): Promise<{ uri: string; stop: () => Promise<void> }>;
}

const shared: Target = { engine: inject("mongoEngine"), storage: inject("mongoStorage"), start: async () => ({ uri: inject("mongoUri"), stop: async () => undefined }) };
const javaHere = ((): boolean => {
  try {
    execFileSync("sh", ["-c", "command -v java && command -v javac && command -v mvn"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
const mongoJavaServer = (storage: MongoJavaServerStorage): Target => ({
  engine: "mongo-java-server",
  storage,
  start: () => startDatabase({ env: { ...process.env, MONGODB_URI: "" }, engine: "mongo-java-server", storage }),
});
const targets: Target[] = [
  shared,
  ...(javaHere ? (["memory", "h2"] as const).filter((s) => !(shared.engine === "mongo-java-server" && shared.storage === s)).map(mongoJavaServer) : []),
];

const id = (s: string | number): never => s as never;

describe.each(targets.map((target) => ({ target, label: `${target.engine}${target.storage ? ` (${target.storage})` : ""}` })))(
  "engine features the project uses: $label",
  ({ target }) => {
    /** Real MongoDB (external is assumed to be). */
    const isMongoDb = target.engine !== "mongo-java-server";
    let uri: string;
    let stop: () => Promise<void>;
    let client: MongoClient;
    let n = 0;
    const dbName = testDatabaseName("features");
    const fresh = (): Collection<Document> => client.db(dbName).collection(`c${n++}`);

    beforeAll(async () => {
      ({ uri, stop } = await target.start());
      client = await new MongoClient(uri).connect();
    });
    afterAll(async () => {
      await client.db(dbName).dropDatabase();
      await client.close();
      await stop();
    });

    it("findOneAndUpdate with upsert and returnDocument after, $setOnInsert, $inc", async () => {
      const c = fresh();
      const options = { upsert: true, returnDocument: "after" } as const;
      expect(await c.findOneAndUpdate({ _id: id("x") }, { $setOnInsert: { a: 1 }, $inc: { n: 1 } }, options)).toEqual({ _id: "x", a: 1, n: 1 });
      expect(await c.findOneAndUpdate({ _id: id("x") }, { $setOnInsert: { a: 2 }, $inc: { n: 1 } }, options)).toEqual({ _id: "x", a: 1, n: 2 });
    });

    it("compound unique indexes reject duplicates with code 11000; a second insert of one _id too", async () => {
      const c = fresh();
      await c.createIndex({ account: 1, key: 1 }, { unique: true });
      await c.insertOne({ account: "a", key: "k" });
      await expect(c.insertOne({ account: "a", key: "k" })).rejects.toMatchObject({ code: 11000 });
      await c.insertOne({ account: "b", key: "k" });
      await c.insertOne({ account: "a", key: "l" });
      expect(await c.countDocuments()).toBe(3);
      await c.insertOne({ _id: id("same") });
      await expect(c.insertOne({ _id: id("same") })).rejects.toMatchObject({ code: 11000 });
    });

    it("core's version-checked update: $set, $inc and $push in one updateOne filtered on _id, tenant, version and $exists: false", async () => {
      const c = fresh();
      await c.insertOne({ _id: id("res_1"), account: "acct_1", livemode: false, name: "a", version: 0, pending_events: [{ _id: "evt_1" }] });
      const filter = (version: number): Document => ({ _id: id("res_1"), account: "acct_1", livemode: false, version, deleted: { $exists: false } });
      const update = { $set: { name: "b" }, $inc: { version: 1 }, $push: { pending_events: { _id: "evt_2" } } } as Document;
      expect((await c.updateOne(filter(0), update)).modifiedCount).toBe(1);
      expect((await c.updateOne(filter(0), update)).modifiedCount).toBe(0);
      await c.updateOne(filter(1), { $set: { deleted: true }, $inc: { version: 1 } });
      expect((await c.updateOne(filter(2), update)).modifiedCount).toBe(0);
      expect(await c.findOne({ _id: id("res_1") })).toEqual({
        _id: "res_1",
        account: "acct_1",
        livemode: false,
        name: "b",
        version: 2,
        deleted: true,
        pending_events: [{ _id: "evt_1" }, { _id: "evt_2" }],
      });
    });

    it("$push and $pull on arrays of subdocuments, $pull by a condition included", async () => {
      const c = fresh();
      const pulled = async (condition: Document): Promise<unknown> => {
        await c.replaceOne({ _id: id("r") }, { events: [] }, { upsert: true });
        await c.updateOne({ _id: id("r") }, { $push: { events: { _id: "e1", t: 1 } } } as never);
        await c.updateOne({ _id: id("r") }, { $push: { events: { _id: "e2", t: 2 } } } as never);
        await c.updateOne({ _id: id("r") }, { $pull: { events: condition } } as never);
        return (await c.findOne({ _id: id("r") }))?.events;
      };
      const second = [{ _id: "e2", t: 2 }];
      expect(await pulled({ _id: "e1", t: 1 })).toEqual(second);
      expect(await pulled({ _id: "e1" })).toEqual(second);
      expect(await pulled({ t: { $lt: 2 } })).toEqual(second);
    });

    it("$elemMatch and $all on arrays of {k, v} pairs", async () => {
      const c = fresh();
      await c.insertOne({
        _id: id("r"),
        metadata: [
          { k: "$where", v: "1" },
          { k: "a.b", v: "2" },
        ],
      });
      expect(await c.countDocuments({ metadata: { $elemMatch: { k: "a.b", v: "2" } } })).toBe(1);
      expect(await c.countDocuments({ metadata: { $all: [{ k: "a.b", v: "2" }] } })).toBe(1);
      expect(await c.countDocuments({ metadata: { $all: [{ k: "a.b", v: "other" }] } })).toBe(0);
      expect(await c.countDocuments({ metadata: { $all: [{ k: "$where", v: "1" }] } })).toBe(1);
    });

    it("sorts base62 string _ids byte-wise (desc) and ranges over them with $lt / $gt, with limit (core's list pages)", async () => {
      const c = fresh();
      const ids = ["res_0AbC9", "res_0abC9", "res_0ZzZ0", "res_0000", "res_z000", "res_Z000", "res_9zz", "res_A00"];
      await c.insertMany(ids.map((s) => ({ _id: id(s), account: "a", livemode: false })));
      const bytewise = [...ids].sort(); // JS string order = byte order for ASCII: 0-9 < A-Z < a-z
      const found = async (filter: Document, dir: 1 | -1): Promise<unknown[]> => (await c.find(filter, { sort: { _id: dir } }).toArray()).map((d) => d._id);
      expect(await found({}, -1)).toEqual([...bytewise].reverse());
      expect(await found({ _id: { $lt: "res_0abC9" } }, -1)).toEqual(bytewise.filter((s) => s < "res_0abC9").reverse());
      expect(await found({ _id: { $gt: "res_0abC9" } }, 1)).toEqual(bytewise.filter((s) => s > "res_0abC9"));
      const page = { account: "a", livemode: false, deleted: { $exists: false }, _id: { $lt: id("res_Z000") } };
      expect((await c.find(page, { sort: { _id: -1 }, limit: 2 }).toArray()).map((d) => d._id)).toEqual(["res_A00", "res_9zz"]);
    });

    it("$ne, $in, $exists, $unset, conditional updateOne (modifiedCount), bulkWrite, deleteMany by $lt, countDocuments, projection", async () => {
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
      expect(await c.find({ s: "a" }, { projection: { s: 1 } }).toArray()).toEqual([{ _id: 1, s: "a" }]);
      const bulk = await c.bulkWrite([
        { insertOne: { document: { _id: id(3), t: 5 } } },
        { updateOne: { filter: { _id: id(2) }, update: { $set: { s: "c" } } } },
        { updateOne: { filter: { _id: id(4) }, update: { $setOnInsert: { t: 1 } }, upsert: true } },
      ]);
      expect([bulk.insertedCount, bulk.modifiedCount, bulk.upsertedCount]).toEqual([1, 1, 1]);
      expect((await c.deleteMany({ t: { $lt: 15 } })).deletedCount).toBe(3);
      expect(await c.countDocuments()).toBe(1);
    });

    it("the gateway's idempotency records: Dates compared with $lt, Binary bodies, deleteOne and updateOne on {_id, owner, completed}", async () => {
      const c = fresh();
      const now = Date.now();
      await c.insertOne({ _id: id("k"), created: new Date(now - 1_000), locked_until: new Date(now - 1), owner: "o1", completed: false });
      expect((await c.deleteOne({ _id: id("k"), locked_until: { $lt: new Date(now - 10) }, completed: false })).deletedCount).toBe(0);
      expect((await c.updateOne({ _id: id("k"), owner: "o2", completed: false }, { $set: { completed: true } })).modifiedCount).toBe(0);
      const body = new Binary(Buffer.from([0, 1, 2, 255]));
      expect((await c.updateOne({ _id: id("k"), owner: "o1", completed: false }, { $set: { completed: true, status: 200, body } })).modifiedCount).toBe(1);
      const stored = await c.findOne({ _id: id("k") });
      expect(Buffer.from((stored!.body as Binary).buffer)).toEqual(Buffer.from([0, 1, 2, 255]));
      expect(stored!.created).toEqual(new Date(now - 1_000));
      expect((await c.deleteMany({ created: { $lt: new Date(now) } })).deletedCount).toBe(1);
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

    it("conditional updateOne under concurrency from 20 connections: exactly one winner", async () => {
      const c = fresh();
      await c.insertOne({ _id: id("doc"), version: 0 });
      const clients = await Promise.all(Array.from({ length: 20 }, () => new MongoClient(uri).connect()));
      try {
        const results = await Promise.all(
          clients.map((cl) =>
            cl
              .db(dbName)
              .collection(c.collectionName)
              .updateOne({ _id: id("doc"), version: 0 }, { $inc: { version: 1 } }),
          ),
        );
        const winners = results.filter((r) => r.modifiedCount === 1).length;
        expect({ winners, final: (await c.findOne({ _id: id("doc") }))?.version }).toEqual({ winners: 1, final: 1 });
      } finally {
        await Promise.all(clients.map((cl) => cl.close()));
      }
    });

    it("ping with a client-side timeout (core's health check sends maxTimeMS)", async () => {
      expect(await client.db(dbName).command({ ping: 1 }, { timeoutMS: 1_500 })).toMatchObject({ ok: 1 });
    });

    it("identifies itself: serverStatus.process is 'java' on mongo-java-server (core declares no secondary indexes there), 'mongod' on MongoDB", async () => {
      const status = await client.db("admin").command({ serverStatus: 1 });
      expect(status.process).toBe(isMongoDb ? "mongod" : "java");
    });

    it("the version it claims: mongo-java-server says MongoDB 5.0.0 with wire version 13 (the runner's claim), and knows no `hello`", async () => {
      const build = await client.db("admin").command({ buildInfo: 1 });
      const isMaster = await client.db("admin").command({ isMaster: 1 });
      const hello = await client
        .db("admin")
        .command({ hello: 1 })
        .then(
          (answer) => answer.isWritablePrimary as unknown,
          (e: Error) => e.message,
        );
      if (isMongoDb) {
        expect(isMaster.maxWireVersion).toBeGreaterThanOrEqual(13);
        expect(hello).toBe(true);
      } else {
        // Its own best, "5.0" with wire version 8, is below the driver's minimum (9), so the runner claims 13, 5.0's real one.
        expect({ version: build.version, wire: isMaster.maxWireVersion }).toEqual({ version: "5.0.0", wire: 13 });
        expect(hello).toBe("no such command: 'hello'");
      }
    });

    it("non-unique indexes: declared and listed everywhere, but mongo-java-server keeps no data in them and answers no explain", async () => {
      const c = fresh();
      await c.insertMany(Array.from({ length: 5 }, (_, i) => ({ _id: id(`r${i}`), account: "a", livemode: false })));
      await c.createIndex({ account: 1, livemode: 1, _id: -1 }, { name: "tenant_order" });
      expect((await c.indexes()).map((index) => index.name).sort()).toEqual(["_id_", "tenant_order"]);
      expect(await c.countDocuments({ account: "a", livemode: false })).toBe(5);
      const explained = await c
        .find({ account: "a", livemode: false })
        .explain()
        .then(
          () => "explained",
          (e: { codeName?: string }) => e.codeName,
        );
      expect(explained).toBe(isMongoDb ? "explained" : "CommandNotFound");
    });
  },
);
