import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import type { CommandStartedEvent, Db, Document, MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { IDEMPOTENCY_COLLECTION, MongoIdempotencyStore, RETENTION_MS, type IdempotencyLease, type IdempotencyScope } from "./idempotency/index.js";
import { MongoRateLimiter, RATE_LIMIT_COLLECTION } from "./ratelimit/mongo.js";
import { MongoPendingRevocationStore, PENDING_REVOCATIONS_COLLECTION } from "./revocation/pending-store.js";
import { gatewayMongoClient } from "./stores.js";

// Every query the gateway's stores send, captured from the wire while they run and explained as sent
// (CONTRACT.md section 10, "Indexes"): no collection scan, and no more documents examined than matched, plus one.
// Inserts (the idempotency lock, a rate-limit token) go by the unique `_id` and cannot be explained.

/** The figures of one explained command. */
interface Plan {
  readonly stages: string[];
  readonly nReturned: number;
  readonly keysExamined: number;
  readonly docsExamined: number;
}

/** The first object under `key` anywhere in an explain answer (aggregate puts the plan under `stages[0].$cursor`). */
function find(value: unknown, key: string): Document | undefined {
  if (!value || typeof value !== "object") return undefined;
  const record = value as Document;
  if (record[key] && typeof record[key] === "object") return record[key] as Document;
  for (const child of Object.values(record)) {
    const found = find(child, key);
    if (found) return found;
  }
  return undefined;
}

/** Every `stage` name of the winning plan, in the classic engine's names (also given for plans run by SBE). */
function stagesOf(value: unknown): string[] {
  if (!value || typeof value !== "object") return [];
  const record = value as Document;
  const own = typeof record["stage"] === "string" ? [record["stage"] as string] : [];
  return [...own, ...Object.values(record).flatMap(stagesOf)];
}

/** Explains one command as the driver sent it, with execution statistics. */
async function explain(db: Db, sent: Document): Promise<Plan> {
  const { lsid, txnNumber, $db, $clusterTime, $readPreference, writeConcern, readConcern, ...command } = sent;
  const answer = await db.command({ explain: command, verbosity: "executionStats" });
  const stats = find(answer, "executionStats")!;
  const top = (stats["executionStages"] ?? {}) as Document;
  // A write returns no documents; what it matched is its "returned".
  const matched = Number(top["nMatched"] ?? top["nWouldDelete"] ?? 0);
  return {
    stages: stagesOf(find(answer, "queryPlanner")!["winningPlan"]),
    nReturned: Math.max(Number(stats["nReturned"]), matched),
    keysExamined: Number(stats["totalKeysExamined"]),
    docsExamined: Number(stats["totalDocsExamined"]),
  };
}

/** A command's shape: collection, command and the fields its filter names, e.g. `idempotency_keys delete {_id,owner}`. */
function shapeOf(command: Document): string {
  const name = Object.keys(command)[0]!;
  const filter = (command["filter"] ?? command["updates"]?.[0]?.q ?? command["deletes"]?.[0]?.q ?? command["pipeline"]?.[0]?.$match ?? {}) as Document;
  const sortKeys = command["sort"] instanceof Map ? [...(command["sort"] as Map<string, unknown>).keys()] : Object.keys(command["sort"] ?? {});
  const sort = sortKeys.length > 0 ? ` sort {${sortKeys.join(",")}}` : "";
  return `${command[name]} ${name} {${Object.keys(filter).join(",")}}${sort}`;
}

/** A stored document as the test writes it: string ids. */
type Raw = { _id: string } & Document;
const scope = (accountId: string, key: string): IdempotencyScope => ({ accountId, livemode: false, key });
const response = { status: 201, body: Buffer.from("{}"), requestId: "req_plan" };
const COLLECTIONS = [IDEMPOTENCY_COLLECTION, RATE_LIMIT_COLLECTION, PENDING_REVOCATIONS_COLLECTION];
const QUERIES = ["find", "update", "delete", "aggregate", "findAndModify"];

/** The stores' client, watched; `plain` (unwatched) seeds, saves and restores the data and runs the explains. */
let watched: MongoClient;
let plain: MongoClient;
let db: Db;
let plainDb: Db;
const sent: CommandStartedEvent[] = [];
const plans = new Map<string, Plan>();

/**
 * Runs one step of the stores and explains each query it sent against the data as it was before the step
 * (so an update or delete explained still finds what it found), then puts back the data as the step left it.
 */
async function step(run: () => Promise<unknown>): Promise<void> {
  const saved = async () => Promise.all(COLLECTIONS.map((c) => plainDb.collection<Raw>(c).find().toArray()));
  const restore = async (data: Raw[][]) => {
    for (const [i, c] of COLLECTIONS.entries()) {
      await plainDb.collection<Raw>(c).deleteMany({});
      if (data[i]!.length > 0) await plainDb.collection<Raw>(c).insertMany(data[i]!);
    }
  };
  const before = await saved();
  const from = sent.length;
  await run();
  const commands = sent.slice(from).filter((e) => QUERIES.includes(e.commandName));
  const after = await saved();
  await restore(before);
  for (const { command } of commands) {
    const shape = shapeOf(command);
    if (!plans.has(shape)) plans.set(shape, await explain(plainDb, command));
  }
  await restore(after);
}

beforeAll(async () => {
  watched = gatewayMongoClient(inject("mongoUri"));
  watched.options.monitorCommands = true;
  watched.on("commandStarted", (event) => sent.push(event));
  plain = gatewayMongoClient(inject("mongoUri"));
  const name = testDatabaseName("gateway_query_plans");
  db = watched.db(name);
  plainDb = plain.db(name);

  // Other tenants' data around what the queries look for: 600 records, 900 tokens, 100 pending revocations, all
  // far from expiring (the TTL monitor leaves them alone while the test runs).
  const now = Date.now();
  await plainDb.collection<Raw>(IDEMPOTENCY_COLLECTION).insertMany(
    Array.from({ length: 600 }, (_, i) => ({
      _id: `acct_${i % 30}/test/k${i}`,
      account: `acct_${i % 30}`,
      livemode: false,
      fingerprint: "fp",
      created: new Date(now - i * 60_000),
      expires_at: new Date(now - i * 60_000 + RETENTION_MS),
      owner: `o${i}`,
      locked_until: new Date(now - i * 60_000 + 30_000),
      completed: i % 2 === 0,
      request_id: `req_${i}`,
    })),
  );
  const window = Math.floor(now / 1_000);
  await plainDb
    .collection<Raw>(RATE_LIMIT_COLLECTION)
    .insertMany(
      Array.from({ length: 900 }, (_, i) => ({ _id: `key_${i % 30}|${window - (i % 3)}|${i}`, b: `key_${i % 30}`, w: window - (i % 3), expires_at: new Date(now + 3_600_000) })),
    );
  await plainDb.collection<Raw>(PENDING_REVOCATIONS_COLLECTION).insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: `hash_${i}`, since: new Date(now - i * 1_000) })));
  // Written by the version before `expires_at`: two records, and tokens of three old windows of one key.
  await plainDb.collection<Raw>(IDEMPOTENCY_COLLECTION).insertMany(
    ["a", "b"].map((k) => ({
      _id: `acct_legacy/test/${k}`,
      account: "acct_legacy",
      livemode: false,
      fingerprint: "fp",
      created: new Date(now),
      owner: k,
      locked_until: new Date(now),
      completed: true,
      request_id: "req_legacy",
    })),
  );
  await plainDb
    .collection<Raw>(RATE_LIMIT_COLLECTION)
    .insertMany(Array.from({ length: 3 }, (_, i) => ({ _id: `key_legacy|${window - 10 - i}|0`, b: "key_legacy", w: window - 10 - i })));
});
afterAll(async () => {
  await plainDb.dropDatabase();
  await Promise.all([watched.close(), plain.close()]);
});

// A runner timeout, not a timing assertion: it seeds and explains a few thousand documents on a shared machine.
it("every query of the idempotency, rate-limit and revocation stores is served by an index", { timeout: 180_000 }, async () => {
  const store = new MongoIdempotencyStore(db);
  // The gateways' clocks stand still an hour ahead: both take from one window, which the TTL monitor leaves alone.
  const hourAhead = Date.now() + 3_600_000;
  const limiters = [new MongoRateLimiter(db, () => hourAhead), new MongoRateLimiter(db, () => hourAhead)];
  const revocations = new MongoPendingRevocationStore(db);
  // A start: indexes, and the fill-ins for what the version before TTL wrote.
  for (const indexed of [store, limiters[0]!, revocations]) await step(() => indexed.ensureIndexes());

  // Idempotency: lock, record, lookup of a recorded response (replay) and of a held lock (409), release.
  let lease: IdempotencyLease | undefined;
  await step(async () => {
    const begun = await store.begin(scope("acct_plan", "k1"), "fp", "req_1");
    if (begun.kind === "acquired") lease = begun.lease;
  });
  await step(() => lease!.complete(response));
  await step(async () => expect((await store.begin(scope("acct_plan", "k1"), "fp", "req_2")).kind).toBe("replay"));
  await step(async () => {
    const begun = await store.begin(scope("acct_plan", "k2"), "fp", "req_3");
    if (begun.kind === "acquired") lease = begun.lease;
  });
  await step(() => expect(store.begin(scope("acct_plan", "k2"), "fp", "req_4")).rejects.toMatchObject({ code: "idempotency_key_in_use" }));
  await step(() => lease!.release());
  // A lock left by a dead gateway, taken over: a record whose lock ended a second ago.
  await plainDb.collection<Raw>(IDEMPOTENCY_COLLECTION).updateOne({ _id: "acct_1/test/k1" }, { $set: { locked_until: new Date(Date.now() - 1_000), completed: false } });
  await step(async () => expect((await store.begin(scope("acct_1", "k1"), "fp", "req_5")).kind).toBe("acquired"));
  // A record past its 24 hours that the TTL monitor has not deleted yet (a store whose clock is a day ahead).
  const tomorrow = new MongoIdempotencyStore(db, { now: () => Date.now() + RETENTION_MS + 60_000 });
  await step(async () => expect((await tomorrow.begin(scope("acct_2", "k2"), "fp", "req_6")).kind).toBe("acquired"));

  // Rate limit: two gateways on one bucket, so the second collides and counts the window.
  await step(() => limiters[0]!.take("key_plan", 5));
  await step(() => limiters[1]!.take("key_plan", 5));

  // Pending revocations: add, the periodic list, remove.
  await step(() => revocations.add({ hash: "hash_plan", since: new Date() }));
  await step(async () => expect(await revocations.list()).toHaveLength(101));
  await step(() => revocations.remove("hash_plan"));

  const table = [...plans].map(([shape, p]) => ({ query: shape, plan: [...new Set(p.stages)].join(">"), returned: p.nReturned, keys: p.keysExamined, docs: p.docsExamined }));
  console.log(`gateway query plans (explain executionStats, MongoDB ${(await plainDb.admin().serverInfo())["version"]}):\n${table.map((r) => JSON.stringify(r)).join("\n")}`);

  expect([...plans.keys()].sort()).toEqual(
    [
      "idempotency_keys find {_id}", // lookup
      "idempotency_keys update {_id,owner,completed}", // record the response
      "idempotency_keys delete {_id,owner,completed}", // release
      "idempotency_keys delete {_id,locked_until,completed}", // take over a stale lock
      "idempotency_keys delete {_id,owner}", // a record past its expiry
      "idempotency_keys update {expires_at}", // start: fill in `expires_at` of older records
      "rate_limit_tokens aggregate {b,w}", // count of a window after a collision
      "rate_limit_tokens delete {expires_at,w}", // start: old windows of the version before TTL
      "pending_revocations update {_id}", // add (upsert)
      "pending_revocations find {} sort {since}", // list, oldest first
      "pending_revocations delete {_id}", // remove
    ].sort(),
  );
  for (const [shape, p] of plans) {
    expect({ shape, collectionScan: p.stages.includes("COLLSCAN") }).toEqual({ shape, collectionScan: false });
    expect({ shape, docsExaminedAtMostReturnedPlusOne: p.docsExamined <= p.nReturned + 1 }).toEqual({ shape, docsExaminedAtMostReturnedPlusOne: true });
  }
});
