import { IDEMPOTENCY_RETENTION_MS, idempotencyScopeId } from "@rms/proto";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import type { QueryPlan } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { tenantKey } from "@rms/positions";
import type { Db } from "mongodb";
import { pino } from "pino";
import { Registry } from "prom-client";
import { describe, expect, inject, it } from "vitest";
import { hashSecret, newSecret } from "./accounts/secrets.js";
import { AccountStore, type AccountDocument, type KeyDocument } from "./accounts/store.js";
import type { Tenant } from "./caller.js";
import { eventRelay } from "./event-relay.js";
import type { Bounds, StoredEvent } from "./events/model.js";
import { EventStore } from "./events/store.js";
import { EventLog, type StreamFilter } from "./events/log.js";
import { idAt, newId } from "./ids.js";
import { JOB_ERRORS_COLLECTION, JOBS_COLLECTION, type JobDocument, type JobErrorDocument, type JobFilter, type JobStatus, type JobType } from "./jobs/model.js";
import { previewJob } from "./jobs/preview.js";
import { JobFiles } from "./files/for-jobs.js";
import { bulkExecutor } from "./jobs/runner/bulk.js";
import { claimJob, runSlot } from "./jobs/runner/claim.js";
import { runJob } from "./jobs/runner/run.js";
import type { RunnerJob } from "./jobs/runner/seam.js";
import { catchUp } from "./jobs/runner/queue.js";
import { JobStore } from "./jobs/store.js";
import type { PendingEvent, ResourceDocument, ResourceState } from "./resources/model.js";
import { idBoundAt, matchingFilter, type MarkedResource } from "./resources/batch.js";
import { nameFields } from "./resources/filter-query.js";
import { SEARCH_EXAMINED_MAX } from "./resources/search.js";
import { parseSearchQuery } from "./resources/search-query.js";
import { RESOURCES_COLLECTION, ResourceStore } from "./resources/store.js";
import { startCore } from "./server.js";
import { DEFAULT_SETTINGS } from "./settings.js";
import { LeaseQueue } from "./storage/lease.js";
import { newEvent } from "./storage/outbox.js";
import { EVENT_POSITIONS_COLLECTION, EVENTS_COLLECTION, SWEEP_BATCH } from "./storage/relay.js";
import { AttemptStore } from "./webhook-endpoints/attempts.js";
import type { WebhookEndpointDocument } from "./webhook-endpoints/model.js";
import { scheduleRecovery } from "./webhook-endpoints/recover.js";
import { eventDeliveries } from "./webhook-endpoints/event-deliveries.js";
import { WebhookEndpointStore } from "./webhook-endpoints/store.js";
import { repairLanes, wakeLanes, WEBHOOK_LANES_COLLECTION, type LaneDocument } from "./webhook-deliveries/lanes.js";
import { queueDepthGauges } from "./webhook-deliveries/metrics.js";
import { DELIVERIES_PER_FLIGHT, DeliveryQueue, DUE_SORT, endpointDueFilter } from "./webhook-deliveries/queue.js";
import {
  scheduledDeliveryId,
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  WEBHOOK_ENDPOINTS_COLLECTION,
  type AttemptDocument,
  type DeliveryDocument,
} from "./webhook-deliveries/model.js";
import { deliveryTask } from "./worker/tasks/deliveries.js";
import { jobsTask } from "./worker/tasks/jobs.js";
import type { WorkerContext } from "./worker/tasks/task.js";
import { IDEMPOTENCY_RECORDS_COLLECTION, IdempotencyRecords, type IdempotencyRecord } from "./storage/idempotency-records.js";
import { jobRunOptions } from "./testutil/jobs.js";
import { expectExact, expectPage, expectPoint, usePlanCopies } from "./testutil/query-plans.js";

/**
 * ARCHITECTURE rule 7 / CONTRACT.md section 10 "Indexes" (in ../shared/docs/): every query core and its
 * workers run per request or per loop is served by an index. Each case runs the real code (store, relay,
 * claim, runner, retention) over a client that records its commands, and explains exactly those commands
 * on the real server (`@rms/test-db/testkit` explain: it fails on a collection scan). The data is two copies
 * of one realistic set: several accounts in both modes, a few thousand documents of each kind in the
 * measured tenant, others that must not be examined. The code runs on one copy and its commands are
 * explained on the other, which nothing changes, so a delete is measured on what it would delete.
 */

const NOW = Date.now();
const DAY = 86_400_000;
const logger = pino({ level: "silent" });
const request = { requestId: null, idempotencyKey: null };

// The measured tenant and the others, in both modes.
const M: Tenant = { account: newId("acct", NOW - 90 * DAY), livemode: false };
const M_LIVE: Tenant = { account: M.account, livemode: true };
const OTHERS: Tenant[] = [1, 2, 3].flatMap((n) => {
  const account = newId("acct", NOW - (90 - n) * DAY);
  return [
    { account, livemode: false },
    { account, livemode: true },
  ];
});

// The fair claim's backlog: an account flooding its queue, and ten accounts with one job each.
const FLOOD: Tenant = { account: newId("acct", NOW - 80 * DAY), livemode: false };
const QUIET: Tenant[] = Array.from({ length: 10 }, (_, n) => ({ account: newId("acct", NOW - (79 - n) * DAY), livemode: false }));
/** A resource of M (in both modes) with this many events, sequence 0 to 599. */
const HOT_OBJECT = newId("res", NOW - 20 * DAY);
const HOT_OBJECT_CHANGES = 600;

/** The data set, made once so both copies hold the same documents. */
const data = seedData();

const { work, measure } = usePlanCopies("plans", {
  async prepare(db) {
    // The indexes as production declares them: core's start (domains and outboxes) and the workers' tasks.
    const core = await startCore({ mongoUri: inject("mongoUri"), databaseName: db.databaseName, adminToken: "query-plans-admin-token-0123", relay: false });
    await core.stop(1_000);
    const context = workerContext(db);
    for (const task of [jobsTask(), deliveryTask()]) await task.start(context).stop();
    for (const [name, docs] of Object.entries(data.collections)) await db.collection(name).insertMany(docs as never[]);
  },
  report(table) {
    if (process.env["QUERY_PLANS_OUT"]) writeFileSync(process.env["QUERY_PLANS_OUT"], table);
    const measured = <T extends { account: string; livemode: boolean }>(docs: readonly T[]) =>
      docs.filter((d) => d.account === M.account && !d.livemode).length;
    const documents = Object.values(data.collections).reduce((n, docs) => n + docs.length, 0);
    console.log(
      `\nQuery plans (measured tenant: ${measured(data.resources)} resources, ${measured(data.events)} events, ${measured(data.jobs)} jobs; ` +
        `${documents} documents in all)\n${table}\n`,
    );
  },
});

function workerContext(db: Db): WorkerContext {
  return { db, logger, workerId: "query-plans", written: () => {}, settings: DEFAULT_SETTINGS, metrics: new Registry() };
}

const pageOf = (plans: QueryPlan[], collection: string) => {
  const found = plans.filter((p) => p.operation === `find ${collection}`);
  expect(found).toHaveLength(1);
  return found[0]!;
};

describe("resources", () => {
  const store = () => new ResourceStore(work);
  const measured = () => data.resources.filter((r) => r.account === M.account && !r.livemode && !r.deleted).sort((a, b) => (a._id < b._id ? 1 : -1));

  it("list: the tenant's page, by every filter combination the list accepts, from a cursor in either direction, at any depth", async () => {
    const all = measured();
    const deep = all[2_000]!._id;
    const at = (i: number) => all[i]!.created;
    const cases: [string, Parameters<ResourceStore["list"]>[1]][] = [
      ["resources list", { limit: 20, filter: {} }],
      ["resources list limit=100", { limit: 100, filter: {} }],
      ["resources list status=archived", { limit: 20, filter: { status: "archived" } }],
      ["resources list status=paused starting_after (deep)", { limit: 20, filter: { status: "paused" }, startingAfter: deep }],
      ["resources list status[]=paused&status[]=archived", { limit: 20, filter: { status: ["paused", "archived"] } }],
      ["resources list starting_after (deep)", { limit: 20, filter: {}, startingAfter: deep }],
      ["resources list ending_before (deep)", { limit: 20, filter: {}, endingBefore: deep }],
      ["resources list metadata[team]", { limit: 20, filter: { metadata: [{ k: "team", v: "t3" }] } }],
      ["resources list metadata[team] ending_before (deep)", { limit: 20, filter: { metadata: [{ k: "team", v: "t3" }] }, endingBefore: deep }],
      ["resources list metadata[env] status=paused", { limit: 20, filter: { metadata: [{ k: "env", v: "prod" }], status: "paused" } }],
      ["resources list metadata[env] status[] (2)", { limit: 20, filter: { metadata: [{ k: "env", v: "prod" }], status: ["paused", "archived"] } }],
      ["resources list created[gte]&created[lt]", { limit: 20, filter: { created: { gte: at(2_500), lt: at(500) } } }],
      ["resources list created[gt] starting_after (deep)", { limit: 20, filter: { created: { gt: at(2_900) } }, startingAfter: deep }],
      ["resources list created[lte] status=archived", { limit: 20, filter: { created: { lte: at(1_000) }, status: "archived" } }],
      [
        "resources list created[lte] metadata[team] status=active",
        { limit: 20, filter: { created: { lte: at(1_000) }, metadata: [{ k: "team", v: "t4" }], status: "active" } },
      ],
    ];
    for (const [label, query] of cases) {
      const { value, plans } = await measure(label, () => store().list(M, query));
      expect(value.items.length, label).toBeGreaterThan(0);
      expectPage(pageOf(plans, RESOURCES_COLLECTION), query.limit);
    }
    // ids[]: at most 100 points of `_id` read whatever else is combined (unknown and foreign ids included).
    const foreign = data.resources
      .filter((r) => r.account !== M.account)
      .slice(0, 20)
      .map((r) => r._id);
    const ids = [...all.filter((_, i) => i % 40 === 0).map((r) => r._id), ...foreign, ...Array.from({ length: 5 }, (_, i) => newId("res", NOW - i * DAY))];
    expect(ids.length).toBe(100);
    const idCases: [string, Parameters<ResourceStore["list"]>[1]][] = [
      ["resources list ids[] (100)", { limit: 20, filter: { ids } }],
      ["resources list ids[] (100) starting_after (deep)", { limit: 20, filter: { ids }, startingAfter: deep }],
      ["resources list ids[] (100) status=archived", { limit: 20, filter: { ids, status: "archived" } }],
      [
        "resources list ids[] (100) metadata[env] created[gte]",
        { limit: 20, filter: { ids, metadata: [{ k: "env", v: "prod" }], created: { gte: at(2_000) } } },
      ],
    ];
    for (const [label, query] of idCases) {
      const { plans } = await measure(label, () => store().list(M, query));
      const plan = pageOf(plans, RESOURCES_COLLECTION);
      expect(plan.stages, label).not.toContain("SORT");
      expect(plan.totalDocsExamined, label).toBeLessThanOrEqual(ids.length);
    }
  });

  it(
    "search: each driver (status, metadata, name prefix, created, none) bounds a request to 1,000 documents examined; what the driver serves alone " +
      "reads a page",
    async () => {
      const all = measured();
      const since = all[2_500]!.created;
      const cases: [string, string, "page" | "window"][] = [
        ["search status", "status:'archived'", "page"],
        ["search status OR status, created", `status:'archived' OR status:'paused' AND created>${since}`, "page"],
        ["search created", `created>=${since}`, "page"],
        ["search metadata AND status", "metadata['team']:'t3' AND status:'active'", "page"],
        ["search name prefix (10 characters)", "name~'RESOURCE 1'", "page"],
        ["search name prefix OR name prefix, status", "name~'resource 1' OR name~'resource 2' status:'active'", "page"],
        ["search name prefix (12 characters)", "name~'resource 123'", "window"],
        ["search name exact", "name:'resource 1234'", "window"],
        ["search metadata AND metadata", "metadata['team']:'t3' AND metadata['env']:'prod'", "window"],
        ["search metadata AND a rare name (window full, empty page)", "metadata['env']:'dev' AND name~'zz'", "window"],
      ];
      for (const [label, text, kind] of cases) {
        const parsed = parseSearchQuery(text);
        if (parsed.none) throw new Error(label);
        const { value, plans } = await measure(label, () => store().search(M, parsed.filter, { limit: 20 }));
        const [plan, ...others] = plans.filter((p) => p.operation.endsWith(RESOURCES_COLLECTION));
        expect(others, label).toHaveLength(0);
        expect(plan!.stages, label).not.toContain("SORT");
        if (kind === "page") {
          expect(value.items.length, label).toBeGreaterThan(0);
          expectPage(plan!, 20);
        } else {
          expect(plan!.totalDocsExamined, label).toBeLessThanOrEqual(SEARCH_EXAMINED_MAX);
        }
      }
    },
  );

  it("retrieve, update and delete by id (a create reads nothing: a repeat under its key is the key's record's, below)", async () => {
    const [a, b] = measured().slice(10, 12);
    const byId = [
      await measure("resource retrieve", () => store().get(M, a!._id)),
      await measure("resource update (versioned)", () => store().update(M, a!._id, { name: "renamed" }, request)),
      await measure("resource delete (tombstone)", () => store().delete(M, b!._id, request)),
    ];
    for (const { plans } of byId) for (const plan of plans) expectPoint(plan);
  });
});

describe("idempotency records", () => {
  it("lock, record, replay, reuse, release, takeover, an expired record and the start's fill-in: every shape by `_id` (or the TTL field)", async () => {
    // Core's idempotency records (storage/idempotency-records.ts), among other tenants' records.
    const records = new IdempotencyRecords(work);
    const now = Date.now();
    await work.collection<IdempotencyRecord>(IDEMPOTENCY_RECORDS_COLLECTION).insertMany(
      Array.from({ length: 300 }, (_, i) => ({
        _id: `acct_other_${i % 30}/test/k${i}`,
        account: `acct_other_${i % 30}`,
        livemode: false,
        fingerprint: "fp",
        created: new Date(now - i * 60_000),
        expires_at: new Date(now - i * 60_000 + IDEMPOTENCY_RETENTION_MS),
        owner: `o${i}`,
        locked_until: new Date(now - i * 60_000 + 30_000),
        completed: i % 2 === 0,
        request_id: `req_${i}`,
      })),
    );
    const scope = (key: string) => ({ id: idempotencyScopeId(M.account, M.livemode, key), account: M.account, livemode: M.livemode });
    const taken = await records.begin(scope("qp-1"), "fp-qp", "req_qp", 30_000);
    if (taken.kind !== "acquired") throw new Error("the key was taken");
    const held = await records.begin(scope("qp-2"), "fp-qp", "req_qp2", 30_000);
    if (held.kind !== "acquired") throw new Error("the key was taken");
    // A lock a dead holder left a second ago, and a record a day old the TTL monitor has not reached yet.
    const raw = work.collection<IdempotencyRecord>(IDEMPOTENCY_RECORDS_COLLECTION);
    const stale = await records.begin(scope("qp-stale"), "fp-qp", "req_dead", 30_000);
    if (stale.kind !== "acquired") throw new Error("the key was taken");
    await raw.updateOne({ _id: scope("qp-stale").id }, { $set: { locked_until: new Date(now - 1_000) } });
    const yesterday = new IdempotencyRecords(work, { now: () => now - IDEMPOTENCY_RETENTION_MS - 60_000 });
    const old = await yesterday.begin(scope("qp-old"), "fp-qp", "req_old", 30_000);
    if (old.kind !== "acquired") throw new Error("the key was taken");
    const measured = [
      await measure("idempotency record: the answer recorded", () => taken.lease.complete({ headers: "[]" }, "req_qp")),
      await measure("idempotency record: a repeat finds the answer", () => records.begin(scope("qp-1"), "fp-qp", "req_again", 30_000)),
      await measure("idempotency record: another request under the key", () => records.begin(scope("qp-1"), "fp-other", "req_other", 30_000)),
      await measure("idempotency record: a repeat while the first runs", () => records.begin(scope("qp-2"), "fp-qp", "req_again", 30_000)),
      await measure("idempotency record: released", () => held.lease.release()),
      await measure("idempotency record: a stale lock taken over", () => records.begin(scope("qp-stale"), "fp-qp", "req_new", 30_000)),
      await measure("idempotency record: past its 24 hours, used anew", () => records.begin(scope("qp-old"), "fp-qp", "req_new", 30_000)),
    ];
    expect(measured.map(({ value }) => (value && typeof value === "object" && "kind" in value ? value.kind : null))).toEqual([
      null,
      "replay",
      "reused",
      "inFlight",
      null,
      "acquired",
      "acquired",
    ]);
    for (const { plans } of measured) for (const plan of plans) expectPoint(plan);
  });
});

describe("events", () => {
  const store = () => new EventStore(work);
  const measured = () => data.events.filter((e) => e.account === M.account && !e.livemode).sort((a, b) => (a._id < b._id ? 1 : -1));
  const seconds = (ms: number) => Math.floor(ms / 1000);

  it("list: every filter the list accepts, alone and combined, with cursors", async () => {
    const deep = measured()[2_000]!._id;
    const recent = { gte: seconds(NOW - 12 * DAY), lt: seconds(NOW - 5 * DAY) };
    const cases: [string, Parameters<EventStore["list"]>[1]][] = [
      ["events list", { limit: 20, created: {} }],
      ["events list type=resource.deleted", { limit: 20, type: { exact: "resource.deleted" }, created: {} }],
      ["events list type=job.*", { limit: 20, type: { prefix: "job." }, created: {} }],
      ["events list type=resource.*", { limit: 20, type: { prefix: "resource." }, created: {} }],
      ["events list types[]=job.failed,resource.deleted", { limit: 20, type: { anyOf: ["job.failed", "resource.deleted"] }, created: {} }],
      ["events list created[gte,lt]", { limit: 20, created: recent }],
      ["events list created[gt,lte]", { limit: 20, created: { gt: seconds(NOW - 30 * DAY), lte: seconds(NOW - 20 * DAY) } }],
      ["events list created[gte] type=job.failed", { limit: 20, type: { exact: "job.failed" }, created: { gte: recent.gte } }],
      ["events list created[gte,lt] type=job.*", { limit: 20, type: { prefix: "job." }, created: recent }],
      ["events list delivery_success=false", { limit: 20, created: {}, deliverySuccess: false }],
      ["events list delivery_success=true", { limit: 20, created: {}, deliverySuccess: true }],
      ["events list delivery_success=false type=job.*", { limit: 20, type: { prefix: "job." }, created: {}, deliverySuccess: false }],
      ["events list delivery_success=true type=job.canceled", { limit: 20, type: { exact: "job.canceled" }, created: {}, deliverySuccess: true }],
      [
        "events list delivery_success=false types[]",
        { limit: 20, type: { anyOf: ["resource.deleted", "job.succeeded"] }, created: {}, deliverySuccess: false },
      ],
      ["events list delivery_success=false created[gte,lt]", { limit: 20, created: recent, deliverySuccess: false }],
      ["events list starting_after (deep)", { limit: 20, startingAfter: deep, created: {} }],
      ["events list ending_before (deep)", { limit: 20, endingBefore: deep, created: {} }],
      ["events list type=job.* starting_after (deep)", { limit: 20, type: { prefix: "job." }, startingAfter: deep, created: {} }],
      ["events list delivery_success=false ending_before (deep)", { limit: 20, endingBefore: deep, created: {}, deliverySuccess: false }],
      ["events list limit=100 type=resource.*", { limit: 100, type: { prefix: "resource." }, created: {} }],
    ];
    for (const [label, query] of cases) {
      const { value, plans } = await measure(label, () => store().list(M, query));
      expect(value.items.length, label).toBeGreaterThan(0);
      expectPage(pageOf(plans, EVENTS_COLLECTION), query.limit);
    }
  });

  it("list: one object's events by sequence (gap repair), with bounds and cursors of that object", async () => {
    const ofHot = measured().filter((e) => (e.object as { id: string }).id === HOT_OBJECT);
    const bySequence = (n: number) => ofHot.find((e) => e.sequence === n)!._id;
    const object = (sequence: Bounds = {}) => ({ id: HOT_OBJECT, sequence });
    const cases: [string, Parameters<EventStore["list"]>[1], number[]][] = [
      ["events list object", { limit: 20, created: {}, object: object() }, [599, 580]],
      ["events list object sequence[gt] (gap repair: 7 applied)", { limit: 20, created: {}, object: object({ gt: 7 }) }, [599, 580]],
      ["events list object sequence[gt] (a short gap)", { limit: 20, created: {}, object: object({ gt: 590 }) }, [599, 591]],
      ["events list object sequence[gte,lte] (deep)", { limit: 20, created: {}, object: object({ gte: 100, lte: 150 }) }, [150, 131]],
      ["events list object starting_after (deep)", { limit: 20, created: {}, object: object(), startingAfter: bySequence(300) }, [299, 280]],
      [
        "events list object ending_before (deep) sequence[lt]",
        { limit: 20, created: {}, object: object({ lt: 500 }), endingBefore: bySequence(200) },
        [220, 201],
      ],
      ["events list object limit=100", { limit: 100, created: {}, object: object() }, [599, 500]],
    ];
    for (const [label, query, [newest, oldest]] of cases) {
      const { value, plans } = await measure(label, () => store().list(M, query));
      expect(
        value.items.map((e) => e.sequence).filter((_, i, all) => i === 0 || i === all.length - 1),
        label,
      ).toEqual([newest, oldest]);
      expect(value.items.every((e) => e.account === M.account && !e.livemode && (e.object as { id: string }).id === HOT_OBJECT)).toBe(true);
      // The page, and a cursor's one read by id (the event it names, for its sequence).
      const [page, ...cursors] = plans.filter((p) => p.operation === `find ${EVENTS_COLLECTION}`).sort((a, b) => b.nReturned - a.nReturned);
      expect(cursors).toHaveLength(query.startingAfter || query.endingBefore ? 1 : 0);
      for (const plan of cursors) expectPoint(plan);
      expectPage(page!, query.limit);
      expect(page!.totalDocsExamined, label).toBeLessThanOrEqual(query.limit + 1);
    }
    // An object with one event, and one with none.
    const single = measured().find((e) => e.type === "job.failed")!;
    const one = await store().list(M, { limit: 20, created: {}, object: { id: (single.object as { id: string }).id, sequence: {} } });
    expect(one.items.map((e) => e._id)).toEqual([single._id]);
    expect((await store().list(M, { limit: 20, created: {}, object: { id: newId("job"), sequence: {} } })).items).toEqual([]);
  });

  it("list: the page holds exactly the matches the filter describes (the index forms change no answer)", async () => {
    const all = measured();
    const recent = { gte: seconds(NOW - 12 * DAY), lt: seconds(NOW - 5 * DAY) };
    const page = async (query: Omit<Parameters<EventStore["list"]>[1], "limit">) => (await store().list(M, { limit: 100, ...query })).items.map((e) => e._id);
    const expected = (keep: (e: StoredEvent) => boolean) =>
      all
        .filter(keep)
        .slice(0, 100)
        .map((e) => e._id);
    expect(await page({ type: { prefix: "job." }, created: {} })).toEqual(expected((e) => e.type.startsWith("job.")));
    expect(await page({ created: recent })).toEqual(expected((e) => e.created >= recent.gte && e.created < recent.lt));
    expect(await page({ created: {}, deliverySuccess: false })).toEqual(expected((e) => (e.pending_endpoints?.length ?? 0) > 0));
    expect(await page({ created: {}, deliverySuccess: true })).toEqual(expected((e) => (e.pending_endpoints?.length ?? 0) === 0));
    expect(await page({ type: { prefix: "resource." }, created: recent, deliverySuccess: false })).toEqual(
      expected((e) => e.type.startsWith("resource.") && e.created >= recent.gte && e.created < recent.lt && (e.pending_endpoints?.length ?? 0) > 0),
    );
  });

  it("retrieve by id", async () => {
    const { plans } = await measure("event retrieve", () => store().get(M, measured()[5]!._id));
    for (const plan of plans) expectPoint(plan);
  });

  it("a stream's catch-up: the tenant's head, a cursor event, and the next positions by the position index, filtered or not", async () => {
    const log = () => new EventLog(work);
    const everything: StreamFilter = { exact: new Set(), prefixes: [], object: "" };
    const byPosition = measured().sort((a, b) => (a as StoredEvent & { pos: number }).pos - (b as StoredEvent & { pos: number }).pos);
    const deep = byPosition[1_000]!;
    const cases: [string, Parameters<EventLog["read"]>[1], StreamFilter][] = [
      ["events stream head (start at the connection)", null, everything],
      ["events stream after a position (deep)", { position: 1_001 }, everything],
      ["events stream after an event (Last-Event-ID, deep)", { event: deep._id }, everything],
      ["events stream after an event, types[]=job.*", { event: deep._id }, { exact: new Set(), prefixes: ["job."], object: "" }],
    ];
    for (const [label, start, filter] of cases) {
      const { value, plans } = await measure(label, () => log().read(M, start, 100, filter, 0n));
      const finds = plans.filter((p) => p.operation === `find ${EVENTS_COLLECTION}`).sort((a, b) => b.nReturned - a.nReturned);
      for (const plan of plans.filter((p) => p.operation === `find ${EVENT_POSITIONS_COLLECTION}`)) expectPoint(plan);
      if (start === null) {
        expect(value.head, label).toBe(byPosition.length);
        expect(finds, label).toEqual([]);
        continue;
      }
      const [page, ...cursor] = finds;
      expect(cursor, label).toHaveLength("event" in start ? 1 : 0);
      for (const plan of cursor) expectPoint(plan);
      // The page examines the positions it reads (the filter applies to them after), never more.
      expectPage(page!, 100);
      expect(page!.totalDocsExamined, label).toBeLessThanOrEqual(101);
      expect(value.through, label).toBe(1_101);
    }
  });
});

describe("jobs", () => {
  const store = () => new JobStore(work, () => {}, 100, new JobFiles(work));
  const measured = () => data.jobs.filter((j) => j.account === M.account && !j.livemode).sort((a, b) => (a._id < b._id ? 1 : -1));
  const seconds = (ms: number) => Math.floor(ms / 1000);

  it("list: status, type, created and their combinations, with cursors", async () => {
    const deep = measured()[1_000]!._id;
    const cases: [string, Parameters<JobStore["list"]>[1]][] = [
      ["jobs list", { limit: 20, created: {} }],
      ["jobs list status=queued", { limit: 20, status: "queued", created: {} }],
      ["jobs list status=failed", { limit: 20, status: "failed", created: {} }],
      ["jobs list type=resources.bulk_delete", { limit: 20, type: "resources.bulk_delete", created: {} }],
      ["jobs list status=failed type=resources.bulk_delete", { limit: 20, status: "failed", type: "resources.bulk_delete", created: {} }],
      ["jobs list created[gte,lte]", { limit: 20, created: { gte: seconds(NOW - 20 * DAY), lte: seconds(NOW - 10 * DAY) } }],
      ["jobs list created[gt] status=canceled", { limit: 20, status: "canceled", created: { gt: seconds(NOW - 25 * DAY) } }],
      ["jobs list starting_after (deep)", { limit: 20, startingAfter: deep, created: {} }],
      ["jobs list type=resources.import ending_before (deep)", { limit: 20, type: "resources.import", endingBefore: deep, created: {} }],
    ];
    for (const [label, query] of cases) {
      const { value, plans } = await measure(label, () => store().list(M, query));
      expect(value.items.length, label).toBeGreaterThan(0);
      expectPage(pageOf(plans, JOBS_COLLECTION), query.limit);
    }
  });

  it("retrieve, cancel, and a job's errors by index", async () => {
    const queued = measured().find((j) => j.status === "queued" && j._id !== data.target)!;
    for (const { plans } of [
      await measure("job retrieve", () => store().get(M, queued._id)),
      await measure("job cancel (queued)", () => store().cancel(M, queued._id, request)),
    ]) {
      for (const plan of plans) expectPoint(plan);
    }
    const job = (await store().get(M, data.withErrors))!;
    for (const [label, query] of [
      ["job errors list", { limit: 20 }],
      ["job errors list starting_after=1500", { limit: 20, startingAfter: 1_500 }],
      ["job errors list ending_before=100", { limit: 20, endingBefore: 100 }],
    ] as const) {
      const { value, plans } = await measure(label, () => store().listErrors(job, query));
      expect(value.items).toHaveLength(20);
      expectPage(pageOf(plans, JOB_ERRORS_COLLECTION), query.limit);
    }
  });

  it("a bulk job's filter as the runner's pass reads it (the planner's pick, no hint): every shape yields its matches in id order", async () => {
    const resources = work.collection<MarkedResource>(RESOURCES_COLLECTION);
    const own = data.resources.filter((r) => r.account === M.account && !r.livemode);
    const ids = own
      .filter((_, i) => i % 3 === 0)
      .slice(0, 1_000)
      .map((r) => r._id);
    const tombstones = own.filter((r) => r.deleted).length;
    const cases: [string, JobFilter, number][] = [
      ["bulk job filter status[] (2)", { status: ["paused", "archived"] }, 0],
      ["bulk job filter metadata status", { metadata: [{ k: "team", v: "t3" }], status: "active" }, 0],
      [
        "bulk job filter metadata (2 keys)",
        {
          metadata: [
            { k: "team", v: "t3" },
            { k: "env", v: "prod" },
          ],
        },
        own.filter((r) => r.metadata[0]!.v === "t3").length,
      ],
      ["bulk job filter ids[] (1,000)", { ids }, 0],
      ["bulk job filter created", { created: { gte: own[1_000]!.created, lt: own[1_500]!.created } }, 0],
    ];
    for (const [label, filter, bound] of cases) {
      const { value, plans } = await measure(label, () =>
        resources
          .find(matchingFilter(M, filter, null, idBoundAt(NOW)), { projection: { _id: 1 } })
          .sort({ _id: 1 })
          .toArray(),
      );
      expect(value.length, label).toBeGreaterThan(0);
      for (const plan of plans) {
        expect(plan.stages, label).not.toContain("SORT");
        // Tombstones are read and left out (a handful: they expire once their event is out).
        if (bound === 0) expectExact(plan, tombstones);
        else expect(plan.totalDocsExamined, label).toBeLessThanOrEqual(bound + tombstones);
      }
    }
  });

  it("the runner: claim, run a bulk job (snapshot by its filter, chunks, checkpoints, finish), renew, catch up", async () => {
    const jobs = work.collection<RunnerJob>(JOBS_COLLECTION);
    const leases = new LeaseQueue<RunnerJob>(jobs, { owner: "query-plans", leaseMs: 60_000 });
    const { value: claimed, plans: claim } = await measure("job claim", () => claimJob(jobs, leases, "query-plans", 60_000, 2));
    expect(claimed?.job._id).toBe(data.target);
    // The running jobs, then the first tenant's queue head (one key, one document), then a write by `_id`.
    expectFairClaim(claim, 1);
    // The run fans its events out in its chunks' transactions; M's endpoints are held disabled meanwhile so the
    // deliveries' data the tests below measure stays as made (fan-out's own plans are measured with the relay).
    const endpoints = work.collection<WebhookEndpointDocument>(WEBHOOK_ENDPOINTS_COLLECTION);
    const enabled = await endpoints.find({ account: M.account, status: "enabled" }, { projection: { _id: 1 } }).toArray();
    await endpoints.updateMany({ _id: { $in: enabled.map((e) => e._id) } }, { $set: { status: "disabled" } });
    const { plans: run } = await measure("job run (bulk_update)", () =>
      runJob(claimed!.job, bulkExecutor("update"), jobRunOptions({ db: work, owner: "query-plans", leases, logger })),
    ).finally(() => endpoints.updateMany({ _id: { $in: enabled.map((e) => e._id) } }, { $set: { status: "enabled" } }));
    const after = await jobs.findOne({ _id: data.target });
    expect(after).toMatchObject({ status: "succeeded" });
    expect(after!.progress.processed).toBeGreaterThan(50);
    // Every query the run makes examines what it yields: the snapshot walks exactly the filter's matches.
    for (const plan of run) expectExact(plan);
    const { plans: renew } = await measure("job lease renewal", () => leases.renew(claimed!.job._id, claimed!.job.epoch));
    for (const plan of renew) expectPoint(plan);
    const { plans: catchUpPlans } = await measure("job takeover catch-up (resources with pending events)", () => catchUp(workerContext(work), claimed!.job));
    // Every document with events not yet relayed, of any tenant (the partial index holds only those: a handful).
    const pending = data.resources.filter((r) => r.pending_events.length > 0).length;
    for (const plan of catchUpPlans) expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(pending);
  });

  it("an export's walk: the filter's index in id order from the last id written, each chunk examining what it yields", async () => {
    // The export's read of one chunk (runner/export.ts): the bulk jobs' query (matchingFilter) from the last id
    // written up to the start's bound, sorted by `_id`, limited to the chunk; never a sort, never a scan.
    const resources = work.collection<MarkedResource>(RESOURCES_COLLECTION);
    const own = data.resources.filter((r) => r.account === M.account && !r.livemode && !r.deleted).sort((a, b) => (a._id < b._id ? -1 : 1));
    const cases: [string, JobFilter, string | null][] = [
      ["export walk, no filter (first chunk)", {}, null],
      ["export walk, no filter (from the middle)", {}, own[Math.floor(own.length / 2)]!._id],
      ["export walk, status=paused", { status: "paused" }, null],
      ["export walk, metadata[team]", { metadata: [{ k: "team", v: "t3" }] }, null],
    ];
    for (const [label, filter, after] of cases) {
      const { value, plans } = await measure(label, () =>
        resources
          .find(matchingFilter(M, filter, after, idBoundAt(NOW)), { projection: { _id: 1, name: 1, status: 1, metadata: 1, created: 1 } })
          .sort({ _id: 1 })
          .limit(200)
          .toArray(),
      );
      expect(value.length, label).toBeGreaterThan(0);
      for (const plan of plans) {
        expect(plan.stages, label).not.toContain("SORT");
        expect(plan.stages, label).not.toContain("COLLSCAN");
        // The chunk's rows, plus the tombstones in its range (a handful) and, for a metadata filter, the pairs the index does not cover.
        expect(plan.totalDocsExamined, label).toBeLessThanOrEqual(filter.metadata ? 200 * 4 : 200 + 50);
      }
    }
  });

  it("the fair claim past a backlog: a tenant with no job running is claimed past a flooding one, each queue head one document", async () => {
    const jobs = work.collection<RunnerJob>(JOBS_COLLECTION);
    const leases = new LeaseQueue<RunnerJob>(jobs, { owner: "query-plans", leaseMs: 60_000 });
    // The walk starts at the flooding tenant (98 queued behind its 2 running), then the first quiet one.
    const { value: claimed, plans } = await measure("job claim past a flooding tenant (2 running, 98 queued)", () =>
      claimJob(jobs, leases, "query-plans", 60_000, 2, OTHERS.at(-1)!),
    );
    expect(claimed?.job.account).toBe(QUIET[0]!.account);
    expectFairClaim(plans, 2);
  });

  it("create: the tenant's queue places (JOBS_QUEUED_PER_ACCOUNT), at the limit and below it", async () => {
    const one = { type: "resources.import" as const, params: { items: [{ name: "x" }] } };
    const { value: refused, plans: atLimit } = await measure("job create at the limit (the tenant's queue places)", () => store().create(FLOOD, one, request));
    expect(refused).toEqual({ limitReached: true });
    const { value: created, plans: below } = await measure("job create (the tenant's queue places)", () => store().create(QUIET[1]!, one, request));
    // QUIET[1] held place 0: the new job takes another one.
    expect("doc" in created && created.doc.queue_slot).toBeGreaterThan(0);
    // One read of the held places: at most JOBS_QUEUED_PER_ACCOUNT keys of the tenant's own.
    for (const plan of [...atLimit, ...below]) {
      expect(plan.totalKeysExamined, plan.shape).toBeLessThanOrEqual(100);
      expectExact(plan, 0);
    }
  });
});

/**
 * A claim of a queued job: one read of the running jobs (examining exactly those: 6 of the other tenants, 2 of
 * the flooding one, and what this test file's claims started), `heads` queue heads of one document each (one
 * per tenant walked: never a tenant's backlog), and the claim's write by `_id`.
 */
function expectFairClaim(plans: QueryPlan[], heads: number): void {
  const [running, ...seeks] = plans.filter((p) => p.operation === "find jobs");
  expectExact(running!, 0);
  // A tenant's head is one seek, or two when the walk looks for the live mode of the account before the next account.
  expect(seeks.length).toBeGreaterThanOrEqual(heads);
  expect(seeks.length).toBeLessThanOrEqual(2 * heads);
  for (const plan of seeks) {
    expectExact(plan, 0);
    expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(1);
  }
  expect(seeks.reduce((n, plan) => n + plan.totalDocsExamined, 0)).toBe(heads);
  for (const plan of plans.filter((p) => p.operation !== "find jobs")) expectPoint(plan);
}

describe("job previews (validate_only)", () => {
  const pristineMatches = (keep: (r: ResourceDocument) => boolean) =>
    data.resources.filter((r) => r.account === M.account && !r.livemode && !r.deleted && keep(r)).length;
  const team3 = (r: ResourceDocument) => r.metadata.some((p) => p.k === "team" && p.v === "t3");

  it("count and sample by the runner's filter query: index-served, each match examined once", async () => {
    const ids = data.resources
      .filter((r) => r.account === M.account && !r.livemode)
      .slice(100, 120)
      .map((r) => r._id);
    const since = Math.floor((NOW - 20 * DAY) / 1000);
    const cases: [string, JobFilter, number][] = [
      ["job preview status=archived", { status: "archived" }, pristineMatches((r) => r.status === "archived")],
      ["job preview metadata[team]", { metadata: [{ k: "team", v: "t3" }] }, pristineMatches(team3)],
      ["job preview ids[] (20)", { ids }, pristineMatches((r) => ids.includes(r._id))],
      ["job preview created[gte]", { created: { gte: since } }, pristineMatches((r) => r.created >= since)],
      [
        "job preview status=paused created[gte]",
        { status: "paused", created: { gte: since } },
        pristineMatches((r) => r.status === "paused" && r.created >= since),
      ],
    ];
    for (const [label, filter, matches] of cases) {
      const { value, plans } = await measure(label, () => previewJob(work, M, { type: "resources.bulk_delete", params: { filter } }, null));
      expect(value.sample.length, label).toBe(Math.min(10, value.total));
      for (const plan of plans) {
        expect(plan.stages, plan.shape).not.toContain("SORT");
        // The count examines each match once (tombstones and the other mode's documents are not in its range).
        expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(matches + 12);
      }
    }
    // Two metadata pairs: the index serves the first, the second is checked on what it yields (as the runner's walk).
    const { plans } = await measure("job preview metadata[team] metadata[env]", () =>
      previewJob(
        work,
        M,
        {
          type: "resources.bulk_delete",
          params: {
            filter: {
              metadata: [
                { k: "team", v: "t3" },
                { k: "env", v: "prod" },
              ],
            },
          },
        },
        null,
      ),
    );
    for (const plan of plans) expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(pristineMatches(team3) + 12);
  });
});

describe("webhook endpoints, attempts, recover", () => {
  it("endpoints: the list, and the slots a create reads", async () => {
    const store = new WebhookEndpointStore(work);
    const { plans } = await measure("webhook endpoints list", () => store.list(M, { limit: 20 }));
    expectPage(pageOf(plans, WEBHOOK_ENDPOINTS_COLLECTION), 20);
    const fields = { url: "https://example.com/hook", enabled_events: ["*"], status: "enabled" as const, description: null, metadata: [] };
    const { plans: create } = await measure("webhook endpoint create (free slot)", () =>
      store.create(M, fields, () => ({ sealed: "sealed", expires_at: null }), request),
    );
    // At most 16 endpoints per account and mode.
    for (const plan of create) expect(plan.totalDocsExamined).toBeLessThanOrEqual(16);
    const id = data.endpoints.quiet;
    for (const { plans: byId } of [
      await measure("webhook endpoint update (versioned)", () => store.update(M, id, { description: "changed" })),
      await measure("webhook endpoint delete", () => store.delete(M, id)),
    ]) {
      for (const plan of byId) expectPoint(plan);
    }
  });

  it("attempts list: by endpoint, event, status and both, with cursors", async () => {
    const store = new AttemptStore(work);
    const mine = data.attempts.filter((a) => a.endpoint === data.endpoints.busy).sort((a, b) => (a._id < b._id ? 1 : -1));
    const cases: [string, Parameters<AttemptStore["list"]>[2]][] = [
      ["attempts list", { limit: 20 }],
      ["attempts list event=", { limit: 20, event: mine[700]!.event }],
      ["attempts list status=succeeded", { limit: 20, status: "succeeded" }],
      ["attempts list event= status=failed", { limit: 20, event: mine[700]!.event, status: "failed" }],
      ["attempts list status=failed starting_after (deep)", { limit: 20, status: "failed", startingAfter: mine[1_500]!._id }],
      ["attempts list ending_before (deep)", { limit: 20, endingBefore: mine[1_500]!._id }],
      ["attempts list created[gte]&created[lt]", { limit: 20, created: { gte: mine[1_200]!.created, lt: mine[300]!.created } }],
      [
        "attempts list created[lte] status=failed starting_after (deep)",
        { limit: 20, status: "failed", created: { lte: mine[900]!.created }, startingAfter: mine[1_500]!._id },
      ],
      ["attempts list created[gt] event=", { limit: 20, event: mine[700]!.event, created: { gt: mine[2_000]!.created } }],
    ];
    for (const [label, query] of cases) {
      const { value, plans } = await measure(label, () => store.list(M, data.endpoints.busy, query));
      expect(value.items.length, label).toBeGreaterThan(0);
      expectPage(pageOf(plans, WEBHOOK_ATTEMPTS_COLLECTION), query.limit);
    }
  });

  it("an event's deliveries: the tenant's endpoints, their scheduled deliveries by id, an attempt that succeeded for the others", async () => {
    const waiting = data.events.find((e) => e.account === M.account && !e.livemode && (e.pending_endpoints ?? []).includes(data.endpoints.busy))!;
    const delivered = data.events.find((e) => e.account === M.account && !e.livemode && (e.pending_endpoints ?? []).length === 0)!;
    for (const [label, event] of [
      ["event deliveries (an endpoint waits)", waiting],
      ["event deliveries (none waits)", delivered],
    ] as const) {
      const { value, plans } = await measure(label, () => eventDeliveries(work, new WebhookEndpointStore(work), M, event));
      expect(value.length, label).toBeGreaterThan(0);
      // At most 16 endpoints: a page of them, their deliveries by id, one attempt each at most.
      for (const plan of plans) expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(16 + 2);
    }
  });

  it("recover: the events still waiting for the endpoint since then, and their deliveries", async () => {
    const { value, plans } = await measure("webhook endpoint recover", () =>
      scheduleRecovery(work, M, data.endpoints.busy, Math.floor((NOW - 14 * DAY) / 1000)),
    );
    expect(value.scheduled).toBeGreaterThan(0);
    for (const plan of plans) expectExact(plan, 5);
  });
});

describe("deliveries", () => {
  it("the lanes repair (a worker's first claim, then every 5 minutes): the endpoints with pending deliveries, then their lanes", async () => {
    const { value, plans } = await measure("webhook lanes repair", () => repairLanes(work, NOW));
    // Every endpoint with pending deliveries has a lane with a turn in this data: nothing to wake.
    expect(value).toBe(0);
    // One seek per endpoint with pending deliveries (and one that finds no more), each reading one delivery
    // however many the endpoint has; then their lanes.
    const seeks = plans.filter((p) => p.operation === `find ${WEBHOOK_DELIVERIES_COLLECTION}`);
    expect(seeks).toHaveLength(data.endpointsWithPending + 1);
    for (const plan of plans) expectExact(plan);
  });

  it(
    "a worker's claim takes the lane whose turn came first (an empty one goes idle, then the next), then that endpoint's next due delivery (examining " +
      "only those in flight before it); its attempt's reads and writes",
    async () => {
      const queue = new DeliveryQueue({ db: work, logger, owner: "query-plans", settings: DEFAULT_SETTINGS, metrics: new Registry() });
      await queue.repairLanesIfDue();
      const { value: first, plans } = await measure("delivery claim: an empty lane, then the next", () => queue.claim());
      expect(first?.delivery.endpoint).toBe(data.endpoints.gone);
      const takes = plans.filter((p) => p.operation === `findAndModify ${WEBHOOK_LANES_COLLECTION}`);
      expect(takes).toHaveLength(2);
      // The head of the turn index, whatever the number of lanes (idle, full and held ones are not in it).
      for (const take of takes) expect(take.totalDocsExamined, take.shape).toBeLessThanOrEqual(1);
      for (const plan of plans.filter((p) => !takes.includes(p)))
        expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(DEFAULT_SETTINGS.webhookEndpointConcurrency + 1);
      const { plans: processing } = await measure("delivery processing and release (endpoint gone), the lane's release", () => queue.process(first!));
      for (const plan of processing) expectPoint(plan);
      // The gone endpoint was taken out of its event, and the flag with it.
      expect(await work.collection<StoredEvent>(EVENTS_COLLECTION).findOne({ _id: data.waitingForGone })).not.toHaveProperty("undelivered");

      const { value: second, plans: busy } = await measure("delivery claim: a lane with deliveries in flight", () => queue.claim());
      expect(second?.delivery.endpoint).toBe(data.endpoints.busy);
      // The claim inside the lane: of one delivery (a claim of one place), one findAndModify (storage/lease.ts, claimMany).
      const claim = busy.find((p) => p.operation === `findAndModify ${WEBHOOK_DELIVERIES_COLLECTION}`)!;
      expect(claim.nReturned).toBe(1);
      expect(claim.totalDocsExamined).toBeLessThanOrEqual(1 + data.inFlight);
      for (const plan of busy.filter((p) => p !== claim)) expectPoint(plan);
    },
  );

  it("a flight's claim that finds one due delivery in its lane: the seek of its id, then one findAndModify by _id (storage/lease.ts, claimMany)", async () => {
    const deliveries = work.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
    const endpoint = newId("we");
    const lone: DeliveryDocument = {
      ...(await deliveries.findOne({ status: "pending" }))!,
      _id: "wd_query_plans_lone",
      endpoint,
      due_at: NOW - 1_000,
      lease_owner: null,
      lease_until: null,
      epoch: 0,
    };
    await deliveries.insertOne(lone);
    try {
      const leases = new LeaseQueue<DeliveryDocument>(deliveries, { owner: "query-plans", leaseMs: 60_000, now: () => NOW });
      const claim = () =>
        leases.claimMany(endpointDueFilter(endpoint, NOW), DUE_SORT, DELIVERIES_PER_FLIGHT * DEFAULT_SETTINGS.webhookEndpointConcurrency, "flight-1");
      const { value, plans } = await measure("delivery claim of a flight: one due delivery in the lane", claim);
      expect(value.map((d) => d._id)).toEqual([lone._id]);
      expect(plans.map((p) => p.operation)).toEqual([`find ${WEBHOOK_DELIVERIES_COLLECTION}`, `findAndModify ${WEBHOOK_DELIVERIES_COLLECTION}`]);
      for (const plan of plans) expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(1);
    } finally {
      await deliveries.deleteOne({ _id: lone._id });
    }
  });

  it("a producer's wake-up of its endpoints' lanes (fan-out, recover)", async () => {
    const { plans } = await measure("webhook lanes wake-up", () =>
      wakeLanes(work, [
        { endpoint: data.endpoints.busy, account: M.account, livemode: false },
        { endpoint: newId("we"), account: M.account, livemode: false },
      ]),
    );
    for (const plan of plans) expectPoint(plan);
  });

  // Retention of deliveries, attempts, events, jobs and tombstones is done by TTL indexes (no query of ours).
  it("the queue depth a scrape reads", async () => {
    const registry = new Registry();
    queueDepthGauges(registry, work.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION));
    const { plans: depth } = await measure("delivery queue depth (metrics scrape, every 10 s at most)", () => registry.metrics());
    // A count of the whole queue: its keys, no document.
    for (const plan of depth) expect(plan.totalDocsExamined).toBe(0);
  });
});

describe("accounts and keys", () => {
  it("the key check by hash and by id, an account's keys, the accounts, a revocation", async () => {
    const store = new AccountStore(work);
    const key = data.api_keys.find((k) => k.account === M.account)!;
    for (const { plans } of [
      await measure("key lookup by hash", () => store.findKeyByHash(key.hash)),
      await measure("key retrieve (presented key check)", () => store.getKey(key._id)),
      await measure("key revoke", () => store.revokeKey(key._id)),
    ]) {
      for (const plan of plans) expectPoint(plan);
    }
    const { plans: keys } = await measure("account keys list", () => store.listKeys(M.account));
    for (const plan of keys) expectExact(plan);
    // The account's own list (GET /v1/api_keys): one mode's keys, by cursor.
    const { value: page, plans: tenantKeys } = await measure("tenant keys list (GET /v1/api_keys)", () => store.listTenantKeys(M, { limit: 2 }));
    expect(page.items).toHaveLength(2);
    const { plans: deeper } = await measure("tenant keys list starting_after", () => store.listTenantKeys(M, { limit: 2, startingAfter: page.items[1]!._id }));
    for (const plan of [...tenantKeys, ...deeper]) expectPage(plan, 2);
    // A use, noted at most once per period: one update by id.
    const { plans: used } = await measure("key use noted", async () => {
      store.noteUse({ _id: key._id }, Math.floor(NOW / 1000));
      await store.getKey(key._id);
    });
    for (const plan of used) expectPoint(plan);
    const { plans: accounts } = await measure("accounts list (operator)", () => store.listAccounts(20));
    for (const plan of accounts) expectExact(plan);
  });
});

describe("the event relay", () => {
  it("a sweep: documents with pending events (fan-out included), bounded by its batch", async () => {
    const relay = eventRelay(work, logger);
    const { value, plans } = await measure("relay sweep", () => relay.sweep());
    await relay.stop();
    expect(value.events).toBeGreaterThan(0);
    for (const plan of plans) expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(SWEEP_BATCH + 16);
  });
});

/** The data set: the measured tenant M (a few thousand of each kind), M's live mode and three other accounts. */
function seedData() {
  const tenants = [M, M_LIVE, ...OTHERS];
  const size = (t: Tenant, measured: number) => (t === M ? measured : Math.floor(measured / 5));
  const resources: ResourceDocument[] = [];
  const events: StoredEvent[] = [];
  const jobs: RunnerJob[] = [];
  const job_errors: JobErrorDocument[] = [];
  const webhook_endpoints: WebhookEndpointDocument[] = [];
  const webhook_deliveries: DeliveryDocument[] = [];
  const webhook_attempts: AttemptDocument[] = [];
  const api_keys: KeyDocument[] = [];
  const accounts: AccountDocument[] = [];
  const endpoints = { busy: "", quiet: "", gone: newId("we", NOW - 50 * DAY) };
  let target = "";
  let withErrors = "";
  let waitingForGone = "";
  let inFlight = 0;
  const places = new Map<string, number>();
  /** Each tenant's busy endpoint, in the order of `tenants`. */
  const busyEndpoints: string[] = [];

  for (const tenant of tenants) {
    if (!tenant.livemode) accounts.push({ _id: tenant.account, created: Math.floor((NOW - 90 * DAY) / 1000) });
    for (let i = 0; i < 5; i++) {
      const secret = newSecret("secret", tenant.livemode);
      const at = NOW - (60 - i) * DAY;
      api_keys.push({
        _id: newId("key", at),
        account: tenant.account,
        kind: "secret",
        livemode: tenant.livemode,
        scopes: [],
        hash: hashSecret(secret),
        prefix: secret.slice(0, 12),
        created: Math.floor(at / 1000),
        expires_at: null,
        revoked_at: null,
      });
    }

    // Endpoints: an enabled busy one, an enabled quiet one, a disabled one.
    const tenantEndpoints = ["enabled", "enabled", "disabled"].map((status, slot) => {
      const at = NOW - (80 - slot) * DAY;
      const id = newId("we", at);
      webhook_endpoints.push({
        _id: id,
        account: tenant.account,
        livemode: tenant.livemode,
        url: "https://example.invalid/hook",
        enabled_events: ["*"],
        status: status as "enabled" | "disabled",
        description: null,
        metadata: [],
        created: Math.floor(at / 1000),
        slot,
        secrets: [{ sealed: "sealed", expires_at: null }],
        version: 0,
        pending_events: [],
        idempotency: id,
        request_hash: null,
      });
      return id;
    });
    const [busy, quiet] = tenantEndpoints as [string, string];
    if (tenant === M) Object.assign(endpoints, { busy, quiet });
    busyEndpoints.push(busy);

    // Resources over 60 days: 5% archived, 10% paused; two metadata pairs; a few with events not yet
    // relayed, a few old tombstones.
    const nResources = size(tenant, 3_000);
    for (let i = 0; i < nResources; i++) {
      const at = NOW - 60 * DAY + Math.floor((i * 60 * DAY) / nResources);
      const id = newId("res", at);
      const state: ResourceState = {
        id,
        name: `resource ${i}`,
        status: i % 20 === 0 ? "archived" : i % 10 === 1 ? "paused" : "active",
        metadata: [
          { k: "team", v: `t${i % 20}` },
          { k: "env", v: i % 3 === 0 ? "prod" : "dev" },
        ],
        created: Math.floor(at / 1000),
      };
      const stuck = i % 200 === 7;
      const pending: PendingEvent[] = stuck ? [newEvent("resource.updated", tenant, state, request, { name: "before" }, at + 1_000)] : [];
      resources.push({
        _id: id,
        account: tenant.account,
        livemode: tenant.livemode,
        ...state,
        ...nameFields(state.name),
        version: stuck ? 2 : 1,
        pending_events: pending,
        idempotency: id,
        request_hash: null,
        ...(i % 150 === 11 ? { deleted: true as const } : {}),
      });
    }

    // Events over 40 days (a quarter past the 30 days kept): types as a service records them, 4% still
    // waiting for an endpoint.
    const nEvents = size(tenant, 4_000);
    for (let i = 0; i < nEvents; i++) {
      const at = NOW - 40 * DAY + Math.floor((i * 40 * DAY) / nEvents);
      const r = i % 100;
      const type =
        r < 40
          ? "resource.created"
          : r < 80
            ? "resource.updated"
            : r < 95
              ? "resource.deleted"
              : r < 98
                ? "job.succeeded"
                : r < 99
                  ? "job.failed"
                  : "job.canceled";
      const event = newEvent(type, tenant, { id: newId("res", at), name: `resource ${i}`, status: "active", metadata: [] }, request, null, at) as StoredEvent;
      const waiting = i % 25 === 3 ? [busy] : i % 100 === 54 ? [busy, quiet] : [];
      if (tenant === M && i === nEvents - 3) {
        waiting.push(endpoints.gone);
        waitingForGone = event._id;
      }
      events.push({ ...event, pending_endpoints: waiting, ...(waiting.length > 0 ? { undelivered: true as const } : {}) });
    }

    // Jobs over 45 days, finished but for a few queued (fewer than the 100 allowed); imports, updates, deletes.
    const nJobs = size(tenant, 1_500);
    for (let i = 0; i < nJobs; i++) {
      const at = NOW - 45 * DAY + Math.floor((i * 45 * DAY) / nJobs);
      const type: JobType = i % 10 < 5 ? "resources.import" : i % 10 < 9 ? "resources.bulk_update" : "resources.bulk_delete";
      const status: JobStatus = i >= nJobs - 20 ? "queued" : i % 17 === 0 ? "failed" : i % 17 === 1 ? "canceled" : "succeeded";
      jobs.push(jobDocument(tenant, newId("job", at), type, status, at));
      if (tenant === M && i === 100) withErrors = jobs.at(-1)!._id;
    }
    // Running jobs, leased by a live worker.
    for (let n = 0; n < (tenant === M ? 0 : 1); n++) {
      const at = NOW - DAY;
      jobs.push({
        ...jobDocument(tenant, newId("job", at), "resources.import", "running", at),
        lease_owner: "another-worker",
        lease_until: NOW + DAY,
        epoch: 1,
        run_slot: `${tenant.account}/${tenant.livemode ? "live" : "test"}/${n}`,
      });
    }

    // Deliveries: a backlog for the busy endpoint (retries due later, some due now, a few in flight), finished
    // ones over 40 days.
    const mineEvents = events.filter((e) => e.account === tenant.account && e.livemode === tenant.livemode);
    const nDeliveries = size(tenant, 2_000);
    for (let i = 0; i < nDeliveries; i++) {
      const event = mineEvents[mineEvents.length - 1 - (i % mineEvents.length)]!;
      const at = NOW - 40 * DAY + Math.floor((i * 40 * DAY) / nDeliveries);
      const status = i % 5 === 0 ? "pending" : "failed";
      webhook_deliveries.push({
        _id: `${scheduledDeliveryId(event._id, busy)}:${i}`,
        account: tenant.account,
        livemode: tenant.livemode,
        event: event._id,
        endpoint: busy,
        trigger: i % 50 === 1 ? "recovery" : "scheduled",
        status,
        // Due now (after the head below) or a retry later.
        due_at: status === "pending" ? (i % 3 === 0 ? NOW - DAY + (i % 97) * 60_000 : NOW + ((i % 97) + 1) * 60_000) : at,
        attempts: 3,
        first_failed_at: at,
        lease_owner: null,
        lease_until: null,
        epoch: 3,
        // A pending delivery is at most a day old (the retry schedule ends within 28 hours).
        created: Math.floor((status === "pending" ? NOW - (i % 1_440) * 60_000 : at) / 1000),
        ...(status === "failed" ? { ended_reason: "schedule_exhausted" } : {}),
      });
    }
    // Attempts over 40 days: three per event, a third of them succeeded.
    const nAttempts = size(tenant, 3_000);
    for (let i = 0; i < nAttempts; i++) {
      const event = mineEvents[Math.floor(i / 3) % mineEvents.length]!;
      const at = NOW - 40 * DAY + Math.floor((i * 40 * DAY) / nAttempts);
      for (const endpoint of i % 4 === 0 ? [busy, quiet] : [busy]) {
        const id = idAt("wa", at, createHash("sha256").update(`${endpoint}:${i}`).digest());
        webhook_attempts.push({
          _id: id,
          account: tenant.account,
          livemode: tenant.livemode,
          event: event._id,
          endpoint,
          status: i % 3 === 0 ? "succeeded" : "failed",
          response_status: i % 3 === 0 ? 200 : 500,
          response_body: null,
          error: null,
          duration_ms: 12,
          trigger: "scheduled",
          created: Math.floor(at / 1000),
          delivery: null,
          disable_endpoint: false,
          retry_after: null,
        });
      }
    }
  }

  // The fair claim's backlog (CONTRACT.md section 6, "Fair sharing"): the flooding account at both of its
  // limits (2 running, 98 queued: 100 unfinished), then ten accounts with one queued job each.
  for (let i = 0; i < 100; i++) {
    const at = NOW - 2 * DAY + i * 1_000;
    const job = jobDocument(FLOOD, newId("job", at), "resources.import", i < 2 ? "running" : "queued", at);
    jobs.push(i < 2 ? { ...job, lease_owner: "another-worker", lease_until: NOW + DAY, epoch: 1, run_slot: runSlot(FLOOD.account, false, i) } : job);
  }
  for (const tenant of QUIET) jobs.push(jobDocument(tenant, newId("job", NOW - DAY), "resources.import", "queued", NOW - DAY));

  // One resource changed 600 times, in both modes of M: the events of one object (`object`, `sequence[...]`).
  for (const tenant of [M, M_LIVE]) {
    for (let sequence = 0; sequence < HOT_OBJECT_CHANGES; sequence++) {
      const type = sequence === 0 ? "resource.created" : "resource.updated";
      const snapshot = { id: HOT_OBJECT, name: `v${sequence}`, status: "active", metadata: [] };
      events.push({ ...newEvent(type, tenant, snapshot, request, null, NOW - 20 * DAY + sequence * 60_000), sequence } as StoredEvent);
    }
  }

  // The measured tenant's queue head: a few deliveries in flight (leased by a live worker, due long ago, one
  // fewer than the endpoint's limit), then the oldest free one, for an endpoint since deleted.
  const headAt = NOW - 2 * DAY;
  const headEvent = events.find((e) => e.account === M.account && !e.livemode && e.pending_endpoints?.includes(endpoints.busy))!;
  for (; inFlight < DEFAULT_SETTINGS.webhookEndpointConcurrency - 1; inFlight++) {
    webhook_deliveries.push({
      ...deliveryOf(headEvent._id, endpoints.busy, headAt + inFlight),
      _id: `${scheduledDeliveryId(headEvent._id, endpoints.busy)}:head${inFlight}`,
      lease_owner: "another-worker",
      lease_until: NOW + DAY,
    });
  }
  webhook_deliveries.push(deliveryOf(waitingForGone, endpoints.gone, headAt + 100));

  // Lanes (webhook-deliveries/lanes.ts): one per endpoint with pending deliveries, their turns in the past; the
  // measured tenant's quiet endpoint first, with nothing left to deliver (a claim finds it empty), then the gone
  // one, then the busy ones (M's with its flights). And lanes a claim must not read: 1,000 idle ones (no turn)
  // and 200 whose turn is tomorrow (full, or held by a Retry-After).
  const lane = (endpoint: string, tenant: Tenant, turn_at: number | null, flights: LaneDocument["flights"] = []): LaneDocument => ({
    _id: endpoint,
    account: tenant.account,
    livemode: tenant.livemode,
    turn_at,
    flights,
    limit: DEFAULT_SETTINGS.webhookEndpointConcurrency,
    failures: 0,
    hold_until: 0,
    version: 1,
  });
  const webhook_lanes: LaneDocument[] = [lane(endpoints.quiet, M, NOW - 3 * DAY), lane(endpoints.gone, M, NOW - 2 * DAY)];
  for (const [n, busy] of busyEndpoints.entries()) {
    const flights = busy === endpoints.busy ? Array.from({ length: inFlight }, (_, i) => ({ id: `flight-${i}`, until: NOW + DAY })) : [];
    webhook_lanes.push(lane(busy, tenants[n]!, NOW - DAY + n, flights));
  }
  for (let i = 0; i < 1_000; i++) webhook_lanes.push(lane(newId("we", NOW - 20 * DAY + i), OTHERS[i % OTHERS.length]!, null));
  for (let i = 0; i < 200; i++) webhook_lanes.push(lane(newId("we", NOW - 10 * DAY + i), OTHERS[i % OTHERS.length]!, NOW + DAY));

  // The job the runner test claims: the oldest unfinished one, a bulk update of M by metadata and created.
  const targetAt = NOW - 50 * DAY;
  target = newId("job", targetAt);
  jobs.push({
    ...jobDocument(M, target, "resources.bulk_update", "queued", targetAt),
    params: { filter: { metadata: [{ k: "team", v: "t3" }], created: { gte: Math.floor((NOW - 50 * DAY) / 1000) } }, update: { status: "paused" } },
  });
  // A job's many item errors.
  for (let index = 0; index < 2_000; index++) {
    job_errors.push({
      _id: `${withErrors}:${index}`,
      job: withErrors,
      account: M.account,
      livemode: false,
      index,
      id: null,
      code: "parameter_invalid",
      param: "name",
      message: "bad",
    });
  }
  for (const job of jobs.filter((j) => j.status === "failed" && j._id !== withErrors).slice(0, 100)) {
    for (let index = 0; index < 20; index++) {
      job_errors.push({
        _id: `${job._id}:${index}`,
        job: job._id,
        account: job.account,
        livemode: job.livemode,
        index,
        id: null,
        code: "write_failed",
        param: null,
        message: "bad",
      });
    }
  }

  function deliveryOf(event: string, endpoint: string, at: number): DeliveryDocument {
    return {
      _id: scheduledDeliveryId(event, endpoint),
      account: M.account,
      livemode: false,
      event,
      endpoint,
      trigger: "scheduled",
      status: "pending",
      due_at: at,
      attempts: 0,
      first_failed_at: null,
      lease_owner: null,
      lease_until: null,
      epoch: 0,
      created: Math.floor(at / 1000),
    };
  }

  function jobDocument(tenant: Tenant, id: string, type: JobType, status: JobStatus, at: number): RunnerJob {
    const finished = status === "succeeded" || status === "failed" || status === "canceled";
    const params =
      type === "resources.import"
        ? { file: "file_imported" }
        : type === "resources.bulk_update"
          ? { filter: { status: "archived" as const }, update: { status: "active" as const } }
          : { filter: { status: "archived" as const } };
    const doc: JobDocument = {
      _id: id,
      account: tenant.account,
      livemode: tenant.livemode,
      version: finished ? 3 : 0,
      pending_events: [],
      idempotency: id,
      request_hash: null,
      type,
      status,
      params,
      progress: { total: 1, processed: finished ? 1 : 0, failed: 0, skipped: 0 },
      result: finished ? { [type === "resources.import" ? "created" : type === "resources.bulk_update" ? "updated" : "deleted"]: 1, errors: [] } : null,
      error: status === "failed" ? { code: "internal_error", message: "failed" } : null,
      attempts: 0,
      cancel_requested_at: null,
      created: Math.floor(at / 1000),
      started_at: finished ? Math.floor(at / 1000) : null,
      finished_at: finished ? Math.floor(at / 1000) + 60 : null,
      lease_owner: null,
      lease_until: null,
      epoch: finished ? 1 : 0,
    };
    if (finished) return doc;
    // An unfinished job holds a place of its tenant's JOBS_QUEUED_PER_ACCOUNT (jobs/queue-limit.ts).
    const key = `${tenant.account}/${tenant.livemode}`;
    places.set(key, (places.get(key) ?? -1) + 1);
    return { ...doc, queue_slot: places.get(key)! };
  }

  // Stream positions (the relay's copy gives them): each tenant's events numbered in id order here, and its counter.
  const positions = new Map<string, number>();
  for (const event of [...events].sort((a, b) => (a._id < b._id ? -1 : 1))) {
    const key = tenantKey(event);
    positions.set(key, (positions.get(key) ?? 0) + 1);
    (event as StoredEvent & { pos: number }).pos = positions.get(key)!;
  }
  const event_positions = [...positions].map(([_id, pos]) => ({ _id, pos }));

  const collections = {
    [RESOURCES_COLLECTION]: resources,
    [EVENTS_COLLECTION]: events,
    [EVENT_POSITIONS_COLLECTION]: event_positions,
    [JOBS_COLLECTION]: jobs,
    [JOB_ERRORS_COLLECTION]: job_errors,
    [WEBHOOK_ENDPOINTS_COLLECTION]: webhook_endpoints,
    [WEBHOOK_DELIVERIES_COLLECTION]: webhook_deliveries,
    [WEBHOOK_ATTEMPTS_COLLECTION]: webhook_attempts,
    [WEBHOOK_LANES_COLLECTION]: webhook_lanes,
    api_keys,
    accounts,
  };
  const endpointsWithPending = new Set(webhook_deliveries.filter((d) => d.status === "pending").map((d) => d.endpoint)).size;
  return {
    collections,
    resources,
    events,
    jobs,
    attempts: webhook_attempts,
    api_keys,
    endpoints,
    target,
    withErrors,
    waitingForGone,
    inFlight,
    endpointsWithPending,
  };
}
