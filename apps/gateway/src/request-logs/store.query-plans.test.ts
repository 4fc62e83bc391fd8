import { newRequestId } from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import type { Document, MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { gatewayMongoClient } from "../stores.js";
import {
  ACCEPTED_COMBINATIONS,
  indexFor,
  REQUEST_LOG_POSITION_INDEX,
  RequestLogStore,
  type RequestLogDocument,
  type RequestLogFilter,
  type RequestLogQuery,
  type SourceFilter,
} from "./store.js";

// Every page query of GET /v1/request_logs, explained on the real server (docs/database.md, "Every query has an
// index"): each accepted combination of filters, with a created range and with each cursor, is served by its index
// in order (no SORT stage, no collection scan) and examines at most the page and one more, whatever the other
// tenants hold. A combination no index serves has no query at all (the list answers 400).

let client: MongoClient;
let store: RequestLogStore;
const T0 = 1_750_000_000_000;
const LIMIT = 5;

/** A record of `account` at `ms`, with the filter fields varied so each filter matches a part of them. */
function record(account: string, livemode: boolean, ms: number, i: number): RequestLogDocument {
  const status = [200, 201, 400, 404, 500][i % 5]!;
  return {
    _id: newRequestId(ms),
    account,
    livemode,
    method: ["GET", "POST", "DELETE"][i % 3]!,
    path: i % 2 === 0 ? "/v1/resources" : `/v1/resources/res_${String(i % 7).padStart(22, "0")}`,
    status,
    status_class: `${Math.floor(status / 100)}xx`,
    ...(status >= 400 ? { error_type: "invalid_request_error", error_code: status === 404 ? "resource_missing" : "parameter_invalid" } : {}),
    api_key: `key_${i % 4}`,
    key_kind: "secret",
    ...(i % 3 === 1 ? { idempotency_key: `idem-${i % 6}` } : {}),
    idempotent_replayed: false,
    duration_ms: 3,
    client_ip: "127.0.0.1",
    user_agent: null,
    created: Math.floor(ms / 1000),
    request_params_json: null,
    response_body_json: null,
    // The dashboard's requests (a quarter), the API's, and records written before `source` existed (none).
    ...(Math.floor(i / 12) % 4 === 0 ? { source: "dashboard" as const } : Math.floor(i / 12) % 4 === 3 ? {} : { source: "api" as const }),
    expires_at: new Date(ms + 14 * 86_400_000 + 10 * 365 * 86_400_000),
  };
}

/** One value per filter field that the seeded data matches many times. */
const VALUES: Required<RequestLogFilter> = {
  status: 404,
  status_class: "4xx",
  method: "POST",
  path: "/v1/resources",
  api_key: "key_1",
  idempotency_key: "idem-1",
  error_code: "resource_missing",
};

function stagesOf(value: unknown): string[] {
  if (!value || typeof value !== "object") return [];
  const record = value as Document;
  const own = typeof record["stage"] === "string" ? [record["stage"] as string] : [];
  return [...own, ...Object.values(record).flatMap(stagesOf)];
}

function indexNamesOf(value: unknown): string[] {
  if (!value || typeof value !== "object") return [];
  const record = value as Document;
  const own = typeof record["indexName"] === "string" ? [record["indexName"] as string] : [];
  return [...own, ...Object.values(record).flatMap(indexNamesOf)];
}

beforeAll(async () => {
  client = gatewayMongoClient(inject("mongoUri"));
  store = new RequestLogStore(client.db(testDatabaseName("gateway_request_log_plans")));
  await store.ensureIndexes();
  // 3,000 records of the account the queries read (both modes), 6,000 of other accounts around them, over 3,000 s.
  const docs: RequestLogDocument[] = [];
  for (let i = 0; i < 9_000; i++) {
    // The fields vary with i / 3, the account with i % 3 and the mode with i / 21: every value occurs in each tenant.
    const account = i % 3 === 0 ? "acct_read" : `acct_other${i % 5}`;
    docs.push(record(account, Math.floor(i / 21) % 2 === 0, T0 + i * 333, Math.floor(i / 3)));
  }
  // Stream positions as the recorder's batches give them: per tenant, in order, for the records that have a source.
  const positions = new Map<string, number>();
  for (const doc of docs.filter((d) => d.source !== undefined)) {
    const tenant = `${doc.account}/${doc.livemode}`;
    positions.set(tenant, (positions.get(tenant) ?? 0) + 1);
    doc.pos = positions.get(tenant)!;
  }
  await store.collection.insertMany(docs);
});
afterAll(async () => {
  await store?.collection.db.dropDatabase();
  await client?.close();
});

/** Explains the page query the store runs for `query`. */
async function explainPage(query: RequestLogQuery) {
  return explainQuery(store.pageQuery(query));
}

async function explainQuery({ filter, sort, hint, limit }: { filter: Document; sort: Document; hint: string; limit: number }) {
  const explained = (await store.collection.find(filter, { sort, hint, limit }).explain("executionStats")) as Document;
  const stats = explained["executionStats"] as Document;
  const winning = (explained["queryPlanner"] as Document)["winningPlan"];
  return {
    hint,
    stages: stagesOf(winning),
    indexes: indexNamesOf(winning),
    returned: Number(stats["nReturned"]),
    docsExamined: Number(stats["totalDocsExamined"]),
    keysExamined: Number(stats["totalKeysExamined"]),
  };
}

it("serves each accepted combination by its own index, alone, with a created range and with each cursor", async () => {
  const middle = newRequestId(T0 + 1_500_000);
  const rows: string[] = [];
  for (const fields of ACCEPTED_COMBINATIONS) {
    const filter = Object.fromEntries(fields.map((f) => [f, VALUES[f]])) as RequestLogFilter;
    const variants: [string, Partial<RequestLogQuery>][] = [
      ["alone", {}],
      ["created range", { created: { gte: Math.floor(T0 / 1000) + 500, lt: Math.floor(T0 / 1000) + 2_500 } }],
      ["created gt/lte", { created: { gt: Math.floor(T0 / 1000) + 500, lte: Math.floor(T0 / 1000) + 2_500 } }],
      ["starting_after", { startingAfter: middle }],
      ["ending_before", { endingBefore: middle }],
      ["starting_after + created", { startingAfter: middle, created: { gte: Math.floor(T0 / 1000) + 100 } }],
    ];
    for (const [label, extra] of variants) {
      for (const livemode of [false, true]) {
        // `source`: one range of the index (dashboard), or one per value merged in id order (api with the records
        // that have none; all): SORT_MERGE, never a blocking SORT.
        for (const [source, ranges] of [
          ["api", 3],
          ["dashboard", 1],
          ["all", 4],
        ] as [SourceFilter, number][]) {
          const plan = await explainPage({ account: "acct_read", livemode, filter, source, limit: LIMIT, ...extra });
          const name = `${fields.join("+") || "(none)"} ${label} ${livemode ? "live" : "test"} source=${source}`;
          rows.push(`${name}: ${plan.indexes.join(",")} returned ${plan.returned}, docs ${plan.docsExamined}, keys ${plan.keysExamined}`);
          expect(plan.stages, name).not.toContain("COLLSCAN");
          expect(plan.stages, name).not.toContain("SORT");
          expect(new Set(plan.indexes), name).toEqual(new Set([plan.hint]));
          expect(plan.returned, `${name}: the seeded data matches it`).toBeGreaterThan(0);
          // The index yields exactly the matches, in order: one page and the one that says more follow.
          expect(plan.docsExamined, name).toBeLessThanOrEqual(LIMIT + 1);
          expect(plan.keysExamined, name).toBeLessThanOrEqual(LIMIT + 1 + ranges);
        }
      }
    }
  }
  expect(rows.length).toBe(ACCEPTED_COMBINATIONS.length * 36);
});

it("hides the dashboard's own records by default: the API's and the older ones without a source; `all` shows both", async () => {
  const count = async (source: SourceFilter | undefined) => {
    let total = 0;
    let cursor: string | undefined;
    for (;;) {
      const page = await store.list({
        account: "acct_read",
        livemode: false,
        filter: {},
        ...(source ? { source } : {}),
        limit: 100,
        ...(cursor ? { startingAfter: cursor } : {}),
      });
      total += page.data.length;
      if (!page.hasMore) return { total, sources: new Set(page.data.map((d) => d.source ?? "none")) };
      cursor = page.data.at(-1)!._id;
    }
  };
  const all = await store.collection.countDocuments({ account: "acct_read", livemode: false });
  const dashboard = await store.collection.countDocuments({ account: "acct_read", livemode: false, source: "dashboard" });
  expect((await count(undefined)).total).toBe(all - dashboard);
  expect((await count("dashboard")).total).toBe(dashboard);
  expect((await count("all")).total).toBe(all);
});

it("serves a stream's catch-up by the position index: the source's records after a position, in order, the page and one more examined", async () => {
  for (const [source, ranges] of [
    ["api", 1],
    ["dashboard", 1],
    ["all", 2],
  ] as [SourceFilter, number][]) {
    for (const after of [0, 400]) {
      const plan = await explainQuery(store.logQuery({ account: "acct_read", livemode: false }, after, source, LIMIT));
      const name = `stream source=${source} after ${after}`;
      expect(plan.stages, name).not.toContain("COLLSCAN");
      expect(plan.stages, name).not.toContain("SORT");
      expect(new Set(plan.indexes), name).toEqual(new Set([REQUEST_LOG_POSITION_INDEX]));
      expect(plan.returned, name).toBe(LIMIT + 1);
      expect(plan.docsExamined, name).toBeLessThanOrEqual(LIMIT + 1);
      expect(plan.keysExamined, name).toBeLessThanOrEqual(LIMIT + 1 + ranges);
    }
  }
});

it("has no index for other combinations (the list refuses them before any query)", () => {
  expect(indexFor({ status: 404, method: "GET" })).toBeUndefined();
  expect(indexFor({ status_class: "4xx", path: "/v1/resources" })).toBeUndefined();
  expect(indexFor({ api_key: "key_1", error_code: "resource_missing" })).toBeUndefined();
  expect(indexFor({ method: "GET", path: "/v1/resources" })).toBe("tenant_source_path_method_id");
  expect(() => store.pageQuery({ account: "acct_read", livemode: false, filter: { status: 404, method: "GET" }, limit: 5 })).toThrow();
});

it("reads one record by its id within its tenant only, by the _id index", async () => {
  const one = await store.collection.findOne({ account: "acct_read", livemode: false });
  expect(await store.retrieve("acct_read", false, one!._id)).toMatchObject({ _id: one!._id });
  expect(await store.retrieve("acct_read", true, one!._id)).toBeNull();
  expect(await store.retrieve("acct_other1", false, one!._id)).toBeNull();
  const explained = (await store.collection.find({ _id: one!._id, account: "acct_read", livemode: false }).explain("executionStats")) as Document;
  expect(stagesOf((explained["queryPlanner"] as Document)["winningPlan"])).not.toContain("COLLSCAN");
  expect(Number((explained["executionStats"] as Document)["totalDocsExamined"])).toBeLessThanOrEqual(1);
});
