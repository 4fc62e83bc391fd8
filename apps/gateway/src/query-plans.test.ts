import { writeFileSync } from "node:fs";
import { testDatabaseName } from "@rms/test-db";
import { CommandLog, explainDuring, planTable, type QueryPlan } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { Binary, MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureSecondaryIndexes } from "./db-engine.js";
import { IDEMPOTENCY_COLLECTION, LOCK_TIMEOUT_MS, MongoIdempotencyStore, RETENTION_MS, scopeId, type IdempotencyScope } from "./idempotency/index.js";
import { MongoRateLimiter, RATE_LIMIT_COLLECTION } from "./ratelimit/mongo.js";
import { MongoPendingRevocationStore, PENDING_REVOCATIONS_COLLECTION } from "./revocation/pending-store.js";

/**
 * ARCHITECTURE rule 7 / CONTRACT.md section 10 "Indexes" (in ../shared/docs/), for the gateway's own
 * collections: every query its stores run per request (idempotency records, rate-limit tokens) or in a
 * loop (cleanup, pending revocations) is served by an index. As in core's query-plans test: the stores run
 * over a client that records their commands, and exactly those commands are explained on an untouched
 * copy of the same data (`@rms/test-db/testkit`; it fails on a collection scan).
 */

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const HOUR = 3_600_000;
const WINDOW_MS = 1_000;

let client: MongoClient;
let log: CommandLog;
let work: Db;
let pristine: Db;
const rows: { label: string; plan: QueryPlan }[] = [];
const accounts = ["acct_0A", "acct_0B", "acct_0C", "acct_0D"];
const scope = (i: number): IdempotencyScope => ({ accountId: accounts[i % accounts.length]!, livemode: i % 2 === 1, key: `key-${i}` });

/** Idempotency records over 48 hours (half past the 24 kept), in progress, completed, and locks left behind. */
const records = Array.from({ length: 6_000 }, (_, i) => {
  const created = NOW - Math.floor((i * 48 * HOUR) / 6_000);
  const state = i % 50 === 7 ? "in-progress" : i % 50 === 8 ? "stale" : "completed";
  return {
    _id: scopeId(scope(i)),
    account: scope(i).accountId,
    livemode: scope(i).livemode,
    fingerprint: "fingerprint",
    created: new Date(created),
    owner: `owner-${i}`,
    locked_until: new Date(state === "in-progress" ? NOW + LOCK_TIMEOUT_MS : created + LOCK_TIMEOUT_MS),
    completed: state === "completed",
    ...(state === "completed" ? { status: 200, body: new Binary(Buffer.from('{"id":"res_1"}')) } : {}),
    request_id: `req_${i}`,
  };
});
/** Recent records of each kind (young enough to be kept). */
const young = (state: (i: number) => boolean) => records.findIndex((r, i) => state(i) && r.created.getTime() > NOW - HOUR);
const COMPLETED = young((i) => i % 50 !== 7 && i % 50 !== 8);
const IN_PROGRESS = young((i) => i % 50 === 7);
const STALE = young((i) => i % 50 === 8);
const EXPIRED = records.length - 1;

/** Rate-limit tokens: 200 buckets over the last 10 windows, the current one of `busy` nearly full. */
const window = Math.floor(NOW / WINDOW_MS);
const tokens = Array.from({ length: 200 }, (_, b) => `key_${b}`).flatMap((bucket) =>
  Array.from({ length: 10 }, (_, age) => window - age).flatMap((w) =>
    Array.from({ length: bucket === "key_0" && w === window ? 90 : 5 }, (_, slot) => ({ _id: `${bucket}|${w}|${slot}`, b: bucket, w })),
  ),
);

/** Pending revocations after a long outage of core: more than one read of the retry loop takes. */
const pending = Array.from({ length: 3_000 }, (_, i) => ({ _id: `hash-${String(i).padStart(5, "0")}`, since: new Date(NOW - (3_000 - i) * 1_000) }));

beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri"), { monitorCommands: true }).connect();
  log = new CommandLog(client);
  work = client.db(testDatabaseName("gateway_plans_work"));
  pristine = client.db(testDatabaseName("gateway_plans_pristine"));
  for (const db of [work, pristine]) {
    // The stores' own declarations, as openStores (stores.ts) makes them.
    const limiter = new MongoRateLimiter(db);
    await ensureSecondaryIndexes(db, [new MongoIdempotencyStore(db), limiter, new MongoPendingRevocationStore(db)]);
    await limiter.close();
    await db.collection(IDEMPOTENCY_COLLECTION).insertMany(records.map((r) => ({ ...r })) as never[]);
    await db.collection(RATE_LIMIT_COLLECTION).insertMany(tokens.map((t) => ({ ...t })) as never[]);
    await db.collection(PENDING_REVOCATIONS_COLLECTION).insertMany(pending.map((p) => ({ ...p })) as never[]);
  }
}, 120_000);

afterAll(async () => {
  const table = planTable(rows);
  if (process.env["QUERY_PLANS_OUT"]) writeFileSync(process.env["QUERY_PLANS_OUT"], table);
  console.log(`\nGateway query plans (${records.length} idempotency records, ${tokens.length} rate-limit tokens, ${pending.length} pending revocations)\n${table}\n`);
  await work?.dropDatabase();
  await pristine?.dropDatabase();
  await client?.close();
});

/** Runs `run` on the working copy and explains what it sent on the untouched one; one table row per shape. */
async function measure<T>(label: string, run: () => Promise<T>): Promise<{ value: T; plans: QueryPlan[] }> {
  const { value, plans } = await explainDuring(client, log, run, { database: pristine.databaseName });
  expect(plans.length, `${label}: no query recorded`).toBeGreaterThan(0);
  for (const plan of plans) rows.push({ label: `${label}: ${plan.shape}`, plan });
  return { value, plans };
}

const expectPoint = (plan: QueryPlan) => expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(1);

describe("idempotency records (every request with an Idempotency-Key)", () => {
  const store = () => new MongoIdempotencyStore(work, { now: () => NOW });
  const again = (i: number, fingerprint = "fingerprint") => store().begin(scope(i), fingerprint, "req_again");

  it("a repeat finds the record by its scope id: replay, another fingerprint, a lock in use, a lock left behind, an expired record", async () => {
    const cases: [string, () => Promise<unknown>][] = [
      ["idempotency repeat, replayed", () => again(COMPLETED)],
      ["idempotency repeat, other parameters (400)", () => again(COMPLETED, "other").catch((e: unknown) => e)],
      ["idempotency repeat, in progress (409)", () => again(IN_PROGRESS).catch((e: unknown) => e)],
      ["idempotency repeat, lock left behind (taken over)", () => again(STALE)],
      ["idempotency repeat, record past 24 h not yet cleaned", () => again(EXPIRED)],
    ];
    for (const [label, run] of cases) {
      const { plans } = await measure(label, run);
      for (const plan of plans) expectPoint(plan);
    }
  });

  it("the lock's end: the response recorded, or the lock released", async () => {
    const fresh = (n: number) => store().begin({ accountId: "acct_0Z", livemode: false, key: `fresh-${n}` }, "fingerprint", "req_fresh");
    const first = await fresh(1);
    const second = await fresh(2);
    if (first.kind !== "acquired" || second.kind !== "acquired") throw new Error("expected new locks");
    for (const { plans } of [
      await measure("idempotency response recorded", () => first.lease.complete({ status: 201, body: Buffer.from("{}"), requestId: "req_fresh" })),
      await measure("idempotency lock released", () => second.lease.release()),
    ]) {
      for (const plan of plans) expectPoint(plan);
    }
  });

  it("cleanup deletes what is past the 24 hours, through the `created` index", async () => {
    const { value, plans } = await measure("idempotency cleanup (every minute)", () => store().removeExpired());
    expect(value).toBeGreaterThan(records.length / 3);
    for (const plan of plans) expect(plan.totalDocsExamined).toBeLessThanOrEqual(plan.nReturned + 2);
    // Every record past the 24 hours but the one a repeat above replaced.
    expect(value).toBe(records.filter((r) => r.created.getTime() < NOW - RETENTION_MS).length - 1);
  });
});

describe("rate-limit tokens (every request, with RATE_LIMIT_STORE=mongodb)", () => {
  it("a contended take counts the bucket's window; the sweep deletes old windows", async () => {
    const limiter = new MongoRateLimiter(work, () => NOW);
    try {
      const { value, plans } = await measure("rate limit take, slot taken (count of the window)", () => limiter.take("key_0", 100));
      expect(value).toEqual({ allowed: true });
      // A count of one bucket's window: its keys only, no document.
      for (const plan of plans) {
        expect(plan.totalDocsExamined).toBe(0);
        expect(plan.totalKeysExamined).toBeLessThanOrEqual(100 + 1);
      }
      const { plans: sweep } = await measure("rate limit sweep of old windows (every 5 s)", () => limiter.removeOld());
      for (const plan of sweep) expect(plan.totalDocsExamined).toBeLessThanOrEqual(plan.nReturned + 2);
    } finally {
      await limiter.close();
    }
  });
});

describe("pending revocations (the retry loop of every gateway)", () => {
  it("the oldest first, at most 1,000 a round, through the `since` index; add and remove by hash", async () => {
    const store = new MongoPendingRevocationStore(work);
    const { value, plans } = await measure("pending revocations, one round's read", () => store.list());
    expect(value).toHaveLength(1_000);
    for (const plan of plans) {
      expect(plan.stages).not.toContain("SORT");
      expect(plan.totalDocsExamined).toBeLessThanOrEqual(1_000);
    }
    for (const { plans: byId } of [
      await measure("pending revocation add", () => store.add({ hash: "hash-new", since: new Date(NOW) })),
      await measure("pending revocation remove", () => store.remove("hash-00001")),
    ]) {
      for (const plan of byId) expectPoint(plan);
    }
  });
});
