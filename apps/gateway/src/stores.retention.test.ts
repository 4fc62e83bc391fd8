import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import type { CommandStartedEvent, Db, Document, MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { IDEMPOTENCY_COLLECTION, MongoIdempotencyStore, RETENTION_MS, type IdempotencyScope } from "./idempotency/index.js";
import { MongoRateLimiter, RATE_LIMIT_COLLECTION } from "./ratelimit/mongo.js";
import { MongoPendingRevocationStore, PENDING_REVOCATIONS_COLLECTION } from "./revocation/pending-store.js";
import { gatewayMongoClient } from "./stores.js";

const HOUR = 60 * 60 * 1000;
/** A stored document as the tests write it: string ids. */
type Raw = { _id: string } & Document;
const scope = (key: string): IdempotencyScope => ({ accountId: "acct_retention", livemode: false, key });
const body = (text: string) => ({ status: 201, body: Buffer.from(text), requestId: `req_${text}` });

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
    const store = new MongoIdempotencyStore(other);
    const limiter = new MongoRateLimiter(other);
    const revocations = new MongoPendingRevocationStore(other);
    for (const indexed of [store, limiter, revocations]) await indexed.ensureIndexes();
    const begun = await store.begin(scope("wire"), "fp", "req_wire");
    if (begun.kind !== "acquired") throw new Error("expected the lock");
    await begun.lease.complete(body("wire"));
    const released = await store.begin(scope("wire-released"), "fp", "req_wire2");
    if (released.kind !== "acquired") throw new Error("expected the lock");
    await released.lease.release();
    await limiter.take("key_wire", 5);
    await revocations.add({ hash: "hash_wire", since: new Date() });
    await revocations.remove("hash_wire");

    const writes = started.filter((e) => ["insert", "update", "delete", "createIndexes", "dropIndexes"].includes(e.commandName));
    expect(new Set(writes.map((e) => e.commandName))).toEqual(new Set(["insert", "update", "delete", "createIndexes", "dropIndexes"]));
    for (const e of writes) expect({ [e.commandName]: e.command["writeConcern"] }).toEqual({ [e.commandName]: { w: "majority", j: true } });
    for (const e of writes.filter((e) => e.commandName === "insert")) expect(e.command["txnNumber"]).toBeDefined();
    for (const e of started.filter((e) => e.commandName === "find")) expect(e.command["$readPreference"]?.mode ?? "primary").toBe("primary");
  } finally {
    await client.close();
  }
});

it("declares every index: a TTL index on expires_at for records and tokens, pending revocations by age; retired indexes dropped", async () => {
  // The indexes of the periodic deletes the TTL indexes replaced, as an older gateway left them.
  await db.collection(IDEMPOTENCY_COLLECTION).createIndex({ created: 1 }, { name: "created" });
  await db.collection(RATE_LIMIT_COLLECTION).createIndex({ w: 1 }, { name: "window" });
  const stores = [new MongoIdempotencyStore(db), new MongoRateLimiter(db), new MongoPendingRevocationStore(db)];
  for (let round = 0; round < 2; round++) for (const store of stores) await store.ensureIndexes(); // twice: as every start does

  const indexes = async (collection: string) =>
    (await db.collection(collection).indexes())
      .map((index: Document) => ({ name: index["name"], key: index["key"], ...(index["expireAfterSeconds"] === undefined ? {} : { ttl: index["expireAfterSeconds"] }) }))
      .sort((a, b) => String(a.name).localeCompare(String(b.name)));
  expect(await indexes(IDEMPOTENCY_COLLECTION)).toEqual([
    { name: "_id_", key: { _id: 1 } },
    { name: "expires_at", key: { expires_at: 1 }, ttl: 0 },
  ]);
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

it("the TTL indexes delete idempotency records 24 h after first use and rate-limit tokens after their window; fresh ones stay", { timeout: 240_000 }, async () => {
  const records = db.collection<Raw>(IDEMPOTENCY_COLLECTION);
  const tokens = db.collection<Raw>(RATE_LIMIT_COLLECTION);
  const store = new MongoIdempotencyStore(db);
  await store.ensureIndexes();

  // First used a minute more than 24 hours ago (the store's clock set back): past its expiry.
  const old = await new MongoIdempotencyStore(db, { now: () => Date.now() - RETENTION_MS - 60_000 }).begin(scope("old"), "fp", "req_old");
  if (old.kind !== "acquired") throw new Error("expected the lock");
  await old.lease.complete(body("old"));
  // Written before records had `expires_at`, 25 hours ago: the next start gives it one.
  const legacyFirstUse = new Date(Date.now() - 25 * HOUR);
  await records.insertOne({
    _id: "acct_retention/test/legacy",
    account: "acct_retention",
    livemode: false,
    fingerprint: "fp",
    created: legacyFirstUse,
    owner: "legacy",
    locked_until: new Date(legacyFirstUse.getTime() + 30_000),
    completed: true,
    status: 201,
    request_id: "req_legacy",
  });
  // Used 23 hours ago, completed: within its 24 hours.
  const recent = await new MongoIdempotencyStore(db, { now: () => Date.now() - 23 * HOUR }).begin(scope("recent"), "fp", "req_recent");
  if (recent.kind !== "acquired") throw new Error("expected the lock");
  await recent.lease.complete(body("recent"));
  // A lock left by a dead gateway on a key whose 24 hours end in 5 s, taken over now: the new holder's lock
  // outlasts the 24 hours, and the record must stay while it is held. (A 2 h lock only makes the case last through
  // the wait below, whatever the wait; the default is 30 s.)
  const edge = Date.now() + 5_000;
  await records.insertOne({
    _id: "acct_retention/test/held",
    account: "acct_retention",
    livemode: false,
    fingerprint: "fp",
    created: new Date(edge - RETENTION_MS),
    expires_at: new Date(edge),
    owner: "dead",
    locked_until: new Date(Date.now() - 1_000),
    completed: false,
    request_id: "req_dead",
  });
  expect((await new MongoIdempotencyStore(db, { lockTimeoutMs: 2 * HOUR }).begin(scope("held"), "fp", "req_held")).kind).toBe("acquired");
  const held = (await records.findOne({ _id: "acct_retention/test/held" }))!;
  expect(held["created"]).toEqual(new Date(edge - RETENTION_MS));
  expect(held["expires_at"]).toEqual(held["locked_until"]);
  await store.ensureIndexes();
  expect((await records.findOne({ _id: "acct_retention/test/legacy" }))!["expires_at"]).toEqual(new Date(legacyFirstUse.getTime() + RETENTION_MS));

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
  await until(
    async () =>
      (await records.countDocuments({ _id: { $in: ["acct_retention/test/old", "acct_retention/test/legacy"] } })) === 0 && (await tokens.countDocuments({ b: "key_past" })) === 0,
    180_000,
  );
  // And the held record's first 24 hours are over, and two more passes have begun since (one might have been under way).
  await until(async () => Date.now() > edge, 10_000);
  const passes = async () => Number((await db.admin().command({ serverStatus: 1 }))["metrics"]["ttl"]["passes"]);
  const seen = await passes();
  await until(async () => (await passes()) >= seen + 2, 60_000);

  // Those passes kept these: a replay within 24 hours still works, a held lock holds.
  expect(await records.countDocuments({ _id: { $in: ["acct_retention/test/recent", "acct_retention/test/held"] } })).toBe(2);
  expect(await store.begin(scope("recent"), "fp", "req_again")).toEqual({ kind: "replay", response: body("recent") });
  await expect(store.begin(scope("held"), "fp", "req_again")).rejects.toMatchObject({ code: "idempotency_key_in_use" });
  expect(await tokens.countDocuments({ b: "key_ahead" })).toBe(3);
  // After its 24 hours the key may be used again.
  expect((await store.begin(scope("old"), "fp", "req_new")).kind).toBe("acquired");
});
