import { testDatabaseName } from "@rms/test-db";
import { CommandLog, explainDuring, type QueryPlan } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { Tenant } from "../caller.js";
import { newId } from "../ids.js";
import { tombstoneFields } from "../storage/tombstone.js";
import { idBoundAt, importedResource, matchingFilter, type MarkedResource } from "./batch.js";
import type { ResourceFilter } from "./filter.js";
import type { ResourceDocument } from "./model.js";
import { SEARCH_EXAMINED_MAX } from "./search.js";
import { parseSearchQuery } from "./search-query.js";
import { RESOURCES_COLLECTION, ResourceStore } from "./store.js";

// Issue 31, item 1 (CONTRACT.md section 3, "List" and "Search"): deleted resources wait 24 h as tombstones, and
// a page must not walk them. The tenant holds 10 live resources, then 10,000 tombstones, then 50 older live
// resources, every one matching every filter below; explained on the real server, a list page examines about
// `limit + 1` documents and a search request at most 1,000 whatever lies deleted in its range.

const NOW = Date.now();
const TOMBSTONES = 10_000;
const tenant: Tenant = { account: newId("acct", NOW - 86_400_000), livemode: false };
const NO_REQUEST = { requestId: null, idempotencyKey: null };
const metadata = [{ k: "team", v: "t1" }];

let client: MongoClient;
let db: Db;
let log: CommandLog;
let newest: string[];
let oldest: string[];

const resource = (ms: number, i: number): ResourceDocument =>
  importedResource(tenant, newId("res", ms), { name: `Lima ${i}`, status: "active", metadata }, ms, NO_REQUEST);

beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri"), { monitorCommands: true }).connect();
  log = new CommandLog(client);
  db = client.db(testDatabaseName("resources-tombstones"));
  await new ResourceStore(db).ensureIndexes();
  // Oldest first: 50 live, 10,000 deleted (as a bulk delete leaves them), 10 live, one millisecond apart.
  const docs: ResourceDocument[] = [];
  let ms = NOW - 3_600_000;
  for (let i = 0; i < 50; i++) docs.push(resource(ms++, i));
  for (let i = 0; i < TOMBSTONES; i++) docs.push({ ...resource(ms++, i), ...tombstoneFields(newId("res", ms)), version: 1 });
  for (let i = 0; i < 10; i++) docs.push(resource(ms++, i));
  for (let i = 0; i < docs.length; i += 1_000) await db.collection<ResourceDocument>(RESOURCES_COLLECTION).insertMany(docs.slice(i, i + 1_000));
  const live = docs.filter((d) => !d.deleted).map((d) => d._id);
  oldest = live.slice(0, 50);
  newest = live.slice(50);
}, 120_000);

afterAll(async () => {
  await db?.dropDatabase();
  await client?.close();
});

/** The plans of the find and aggregate commands `run` sent, explained on the real server. */
async function plansOf<T>(run: () => Promise<T>): Promise<{ value: T; plans: QueryPlan[] }> {
  const { value, plans } = await explainDuring(client, log, run, { database: db.databaseName });
  const reads = plans.filter((p) => p.operation.startsWith("find") || p.operation.startsWith("aggregate") || p.operation.startsWith("count"));
  expect(reads.length).toBeGreaterThan(0);
  return { value, plans: reads };
}

describe("a list page past 10,000 tombstones", () => {
  const store = () => new ResourceStore(db);
  const cases: [string, ResourceFilter][] = [
    ["no filter", {}],
    ["status", { status: "active" }],
    ["status (two)", { status: ["active", "paused"] }],
    ["metadata", { metadata }],
    ["metadata and status", { metadata, status: "active" }],
    ["created", { created: { lte: Math.floor(NOW / 1000) } }],
  ];
  for (const [label, filter] of cases) {
    it(`${label}: the page after the newest 10 examines limit + 1 documents`, async () => {
      const { value, plans } = await plansOf(() => store().list(tenant, { limit: 20, filter, startingAfter: newest.at(0)! }));
      expect(value.items.map((r) => r._id)).toEqual(oldest.slice(-20).reverse());
      for (const plan of plans) {
        expect(plan.stages, label).not.toContain("SORT");
        expect(plan.totalDocsExamined, `${label}: ${plan.shape}`).toBeLessThanOrEqual(21);
      }
    });
  }

  it("ending_before walks back over them the same way", async () => {
    const { value, plans } = await plansOf(() => store().list(tenant, { limit: 5, filter: {}, endingBefore: oldest.at(-1)! }));
    expect(value.items.map((r) => r._id)).toEqual(newest.slice(0, 5).reverse());
    for (const plan of plans) expect(plan.totalDocsExamined).toBeLessThanOrEqual(6);
  });
});

describe("a search request past 10,000 tombstones", () => {
  const store = () => new ResourceStore(db);
  // The bound: limit + 1 where the driving index yields exactly the matches, else the request's window.
  const cases: [string, number][] = [
    ["status:'active'", 21],
    ["metadata['team']:'t1'", 21],
    ["name~'li'", 21],
    ["name~'lima' AND status:'active' AND metadata['team']:'t1'", SEARCH_EXAMINED_MAX],
    ["metadata['team']:'t1' AND name~'lima'", SEARCH_EXAMINED_MAX],
  ];
  for (const [query, bound] of cases) {
    it(`${query}: examines at most 1,000 documents and finds the live ones past them`, async () => {
      const parsed = parseSearchQuery(query);
      if (parsed.none) throw new Error(query);
      const filter = parsed.filter;
      const { value, plans } = await plansOf(() => store().search(tenant, filter, { limit: 20, after: newest.at(0)! }));
      expect(value.items.map((r) => r._id)).toEqual(oldest.slice(-20).reverse());
      for (const plan of plans) expect(plan.totalDocsExamined, `${query}: ${plan.shape}`).toBeLessThanOrEqual(bound);
    });
  }
});

describe("a bulk job's filter past 10,000 tombstones (the planner's pick, no hint)", () => {
  it("reads the live matches only", async () => {
    const resources = db.collection<MarkedResource>(RESOURCES_COLLECTION);
    for (const filter of [{ status: "active" as const }, { metadata }, { metadata, status: "active" as const }, { created: { lte: Math.floor(NOW / 1000) } }]) {
      const { value, plans } = await plansOf(() =>
        resources
          .find(matchingFilter(tenant, filter, null, idBoundAt(NOW)), { projection: { _id: 1 } })
          .sort({ _id: 1 })
          .toArray(),
      );
      expect(value).toHaveLength(60);
      for (const plan of plans) expect(plan.totalDocsExamined, JSON.stringify(filter)).toBeLessThanOrEqual(61);
    }
  });
});
