import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import type { CommandStartedEvent, Db, Document, MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { MongoRateLimiter, RATE_LIMIT_COLLECTION } from "./ratelimit/mongo.js";
import { MongoPendingRevocationStore, PENDING_REVOCATIONS_COLLECTION } from "./revocation/pending-store.js";
import { gatewayMongoClient } from "./stores.js";

/** A stored document as the tests write it: string ids. */
type Raw = { _id: string } & Document;

let mongo: MongoClient;
let db: Db;
let ttlSleepChanged = false;
beforeAll(() => {
  mongo = gatewayMongoClient(inject("mongoUri"));
  db = mongo.db(testDatabaseName("gateway_retention"));
});
afterAll(async () => {
  if (ttlSleepChanged) await db.admin().command({ setParameter: 1, ttlMonitorSleepSecs: 60 }); // MongoDB's default
  await db.dropDatabase();
  await mongo.close();
});

/** Polls until `done` is true; fails after `timeoutMs`. */
async function until(done: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`not done after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

it("writes with majority write concern and journaling, retryable, reading the primary, whatever MONGODB_URI asks for", async () => {
  const uri = inject("mongoUri");
  const weaker = "w=1&journal=false&fsync=false&retryWrites=false&retryReads=false&readPreference=secondaryPreferred";
  const client = gatewayMongoClient(`${uri}${uri.includes("?") ? "&" : uri.endsWith("/") ? "?" : "/?"}${weaker}`);
  const started: CommandStartedEvent[] = [];
  client.options.monitorCommands = true;
  client.on("commandStarted", (event) => started.push(event));
  try {
    expect(client.options.writeConcern).toMatchObject({ w: "majority", journal: true });
    expect(client.options).toMatchObject({ retryWrites: true, retryReads: true });
    expect(client.options.readPreference.mode).toBe("primary");

    // Every write the stores make carries that write concern on the wire; single-document writes are retryable.
    const other = client.db(db.databaseName);
    const limiter = new MongoRateLimiter(other);
    const revocations = new MongoPendingRevocationStore(other);
    for (const indexed of [limiter, revocations]) await indexed.ensureIndexes();
    await limiter.take("key_wire", 5);
    await limiter.take("key_wire", 5); // the window's count after the collision
    await revocations.add({ hash: "hash_wire", since: new Date() });
    await revocations.remove("hash_wire");

    const writes = started.filter((e) => ["insert", "update", "delete", "createIndexes"].includes(e.commandName));
    expect(new Set(writes.map((e) => e.commandName))).toEqual(new Set(["insert", "update", "delete", "createIndexes"]));
    for (const e of writes) expect({ [e.commandName]: e.command["writeConcern"] }).toEqual({ [e.commandName]: { w: "majority", j: true } });
    for (const e of writes.filter((e) => e.commandName === "insert")) expect(e.command["txnNumber"]).toBeDefined();
    for (const e of started.filter((e) => e.commandName === "find")) expect(e.command["$readPreference"]?.mode ?? "primary").toBe("primary");
  } finally {
    await client.close();
  }
});

it("declares every index: a TTL index on expires_at for tokens, pending revocations by age", async () => {
  const stores = [new MongoRateLimiter(db), new MongoPendingRevocationStore(db)];
  for (let round = 0; round < 2; round++) for (const store of stores) await store.ensureIndexes(); // twice: as every start does

  const indexes = async (collection: string) =>
    (await db.collection(collection).indexes())
      .map((index: Document) => ({
        name: index["name"],
        key: index["key"],
        ...(index["expireAfterSeconds"] === undefined ? {} : { ttl: index["expireAfterSeconds"] }),
      }))
      .sort((a, b) => String(a.name).localeCompare(String(b.name)));
  expect(await indexes(RATE_LIMIT_COLLECTION)).toEqual([
    { name: "_id_", key: { _id: 1 } },
    { name: "bucket_window", key: { b: 1, w: 1 } },
    { name: "expires_at", key: { expires_at: 1 }, ttl: 0 },
  ]);
  expect(await indexes(PENDING_REVOCATIONS_COLLECTION)).toEqual([
    { name: "_id_", key: { _id: 1 } },
    { name: "since", key: { since: 1 } },
  ]);
});

it("the TTL index deletes rate-limit tokens after their window; fresh ones stay", { timeout: 240_000 }, async () => {
  const tokens = db.collection<Raw>(RATE_LIMIT_COLLECTION);
  // Tokens of a window ten minutes ago (past), and of one ten minutes ahead (not yet: it stands for a current one,
  // which would expire within two seconds, before the assertion could see it).
  const past = new MongoRateLimiter(db, () => Date.now() - 10 * 60_000);
  const ahead = new MongoRateLimiter(db, () => Date.now() + 10 * 60_000);
  await past.ensureIndexes();
  for (let i = 0; i < 3; i++) await past.take("key_past", 5);
  for (let i = 0; i < 3; i++) await ahead.take("key_ahead", 5);

  await db.admin().command({ setParameter: 1, ttlMonitorSleepSecs: 1 });
  ttlSleepChanged = true;
  // The monitor may be in its 60 s sleep when the parameter changes: bounded, generously.
  await until(async () => (await tokens.countDocuments({ b: "key_past" })) === 0, 180_000);
  // Two more passes have begun since (one might have been under way).
  const passes = async () => Number((await db.admin().command({ serverStatus: 1 }))["metrics"]["ttl"]["passes"]);
  const seen = await passes();
  await until(async () => (await passes()) >= seen + 2, 60_000);

  // Those passes kept the current window's tokens.
  expect(await tokens.countDocuments({ b: "key_ahead" })).toBe(3);
});
