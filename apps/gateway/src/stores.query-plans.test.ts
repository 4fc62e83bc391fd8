import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import type { CommandStartedEvent, Db, Document, MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { MongoRateLimiter, RATE_LIMIT_COLLECTION } from "./ratelimit/mongo.js";
import { MongoPendingRevocationStore, PENDING_REVOCATIONS_COLLECTION } from "./revocation/pending-store.js";
import { gatewayMongoClient } from "./stores.js";

// Every query the gateway's stores send, captured from the wire while they run and explained as sent
// (CONTRACT.md section 10, "Indexes"): no collection scan, and no more documents examined than matched, plus one.
// Inserts (a rate-limit token) go by the unique `_id` and cannot be explained. The idempotency records are core's
// (apps/core/src/query-plans.test.ts).

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

/** A command's shape: collection, command and the fields its filter names, e.g. `pending_revocations delete {_id}`. */
function shapeOf(command: Document): string {
  const name = Object.keys(command)[0]!;
  const filter = (command["filter"] ?? command["updates"]?.[0]?.q ?? command["deletes"]?.[0]?.q ?? command["pipeline"]?.[0]?.$match ?? {}) as Document;
  const sortKeys = command["sort"] instanceof Map ? [...(command["sort"] as Map<string, unknown>).keys()] : Object.keys(command["sort"] ?? {});
  const sort = sortKeys.length > 0 ? ` sort {${sortKeys.join(",")}}` : "";
  return `${command[name]} ${name} {${Object.keys(filter).join(",")}}${sort}`;
}

/** A stored document as the test writes it: string ids. */
type Raw = { _id: string } & Document;
const COLLECTIONS = [RATE_LIMIT_COLLECTION, PENDING_REVOCATIONS_COLLECTION];
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

  // Other tenants' data around what the queries look for: 900 tokens, 100 pending revocations, all
  // far from expiring (the TTL monitor leaves them alone while the test runs).
  const now = Date.now();
  const window = Math.floor(now / 1_000);
  await plainDb.collection<Raw>(RATE_LIMIT_COLLECTION).insertMany(
    Array.from({ length: 900 }, (_, i) => ({
      _id: `key_${i % 30}|${window - (i % 3)}|${i}`,
      b: `key_${i % 30}`,
      w: window - (i % 3),
      expires_at: new Date(now + 3_600_000),
    })),
  );
  await plainDb
    .collection<Raw>(PENDING_REVOCATIONS_COLLECTION)
    .insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: `hash_${i}`, since: new Date(now - i * 1_000) })));
});
afterAll(async () => {
  await plainDb.dropDatabase();
  await Promise.all([watched.close(), plain.close()]);
});

// A runner timeout, not a timing assertion: it seeds and explains a few thousand documents on a shared machine.
it("every query of the rate-limit and revocation stores is served by an index", { timeout: 180_000 }, async () => {
  // The gateways' clocks stand still an hour ahead: both take from one window, which the TTL monitor leaves alone.
  const hourAhead = Date.now() + 3_600_000;
  const limiters = [new MongoRateLimiter(db, () => hourAhead), new MongoRateLimiter(db, () => hourAhead)];
  const revocations = new MongoPendingRevocationStore(db);
  // A start: indexes.
  for (const indexed of [limiters[0]!, revocations]) await step(() => indexed.ensureIndexes());

  // Rate limit: two gateways on one bucket, so the second collides and counts the window.
  await step(() => limiters[0]!.take("key_plan", 5));
  await step(() => limiters[1]!.take("key_plan", 5));

  // Pending revocations: add, the periodic list, remove.
  await step(() => revocations.add({ hash: "hash_plan", since: new Date() }));
  await step(async () => expect(await revocations.list()).toHaveLength(101));
  await step(() => revocations.remove("hash_plan"));

  const table = [...plans].map(([shape, p]) => ({
    query: shape,
    plan: [...new Set(p.stages)].join(">"),
    returned: p.nReturned,
    keys: p.keysExamined,
    docs: p.docsExamined,
  }));
  console.log(
    `gateway query plans (explain executionStats, MongoDB ` +
      `${(await plainDb.admin().serverInfo())["version"]}):\n${table.map((r) => JSON.stringify(r)).join("\n")}`,
  );

  expect([...plans.keys()].sort()).toEqual(
    [
      "rate_limit_tokens aggregate {b,w}", // count of a window after a collision
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
