import { JobService, ResourceStatus, type Job, type JobParams, type ServiceClient } from "@rms/proto";
import { create } from "@bufbuild/protobuf";
import { JobParamsSchema } from "@rms/proto";
import { eventually } from "@rms/test-db/testkit";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import { thingsCollection } from "../testutil/storage.js";
import { jobStore } from "../testutil/jobs.js";
import { importItemFields } from "./items.js";
import { UNBOUNDED } from "../budget.js";
import { OutboxRelay } from "../storage/relay.js";
import { fastTtlMonitor, TTL_TEST_TIMEOUT_MS, TTL_WAIT_MS } from "../testutil/ttl.js";
import { JOB_RETENTION_MS, JOBS_COLLECTION, jobRetainUntil, type JobDocument } from "./model.js";
import { expireWithJob } from "./runner/run.js";
import { typedParamsOf } from "./validation.js";

let t: TestCore;
let jobs: ServiceClient<typeof JobService>;
beforeAll(async () => {
  t = await startTestCore({ relay: true });
  jobs = t.client(JobService);
});
afterAll(async () => {
  await t?.stop();
});

// biome-ignore lint/suspicious/noExplicitAny: the public job object as core renders it; each assertion states the shape it expects.
const shown = (job: Job): Record<string, any> => JSON.parse(job.json);
const RES = (n: number) => `res_${String(n).padStart(22, "0")}`;
const params = (init: Parameters<typeof create<typeof JobParamsSchema>>[1]): JobParams => create(JobParamsSchema, init);
const importOf = (n: number) => params({ kind: { case: "importItems", value: { items: Array.from({ length: n }, (_, i) => ({ name: `n${i}` })) } } });
const deleteOf = (resourceFilter: Record<string, unknown>) => params({ kind: { case: "bulkDelete", value: { resourceFilter } } });
const updateOf = (resourceFilter: Record<string, unknown>, update: Record<string, unknown>) =>
  params({ kind: { case: "bulkUpdate", value: { resourceFilter, update } } });

/** The code and param of the error a check throws, or "ok". */
function outcome(check: () => unknown): string {
  try {
    check();
    return "ok";
  } catch (error) {
    const e = error as { code: string; param?: string };
    return `${e.code} ${e.param ?? ""}`.trim();
  }
}

describe("job-level params rules (typedParamsOf)", () => {
  const cases: [string, JobParams | undefined, string][] = [
    ["no params", undefined, "parameter_missing type"],
    ["import of one", importOf(1), "ok"],
    ["import of 10,000", importOf(10_000), "ok"],
    ["import of 10,001", importOf(10_001), "parameter_invalid params[items]"],
    ["import of none", importOf(0), "parameter_invalid_empty params[items]"],
    ["delete without filter", params({ kind: { case: "bulkDelete", value: {} } }), "parameter_missing params[filter]"],
    ["delete with an empty filter", deleteOf({}), "parameter_invalid_empty params[filter]"],
    ["1,000 ids", deleteOf({ ids: Array.from({ length: 1_000 }, (_, i) => RES(i)) }), "ok"],
    ["1,001 ids", deleteOf({ ids: Array.from({ length: 1_001 }, (_, i) => RES(i)) }), "parameter_invalid params[filter][ids]"],
    ["a malformed id", deleteOf({ ids: [RES(1), "res_short"] }), "parameter_invalid params[filter][ids][1]"],
    ["an unknown status number", deleteOf({ status: [9] }), "parameter_invalid params[filter][status]"],
    ["several statuses", deleteOf({ status: [ResourceStatus.ACTIVE, ResourceStatus.PAUSED] }), "ok"],
    ["created bounds", deleteOf({ created: { gte: 0n, lte: 5n } }), "ok"],
    ["created gt and lt", deleteOf({ created: { gt: 0n, lt: 5n } }), "ok"],
    ["a negative bound", deleteOf({ created: { gte: -1n } }), "parameter_invalid params[filter][created][gte]"],
    ["metadata equality", deleteOf({ metadata: [{ key: "$where", value: "1" }] }), "ok"],
    ["an empty metadata value to match", deleteOf({ metadata: [{ key: "k", value: "" }] }), "parameter_invalid params[filter][metadata][k]"],
    ["a 41-character key", deleteOf({ metadata: [{ key: "k".repeat(41), value: "1" }] }), `metadata_invalid params[filter][metadata][${"k".repeat(41)}]`],
    ["5 keys", deleteOf({ metadata: Array.from({ length: 5 }, (_, i) => ({ key: `k${i}`, value: "1" })) }), "ok"],
    ["6 keys", deleteOf({ metadata: Array.from({ length: 6 }, (_, i) => ({ key: `k${i}`, value: "1" })) }), "parameter_invalid params[filter][metadata]"],
    [
      "update without update",
      params({ kind: { case: "bulkUpdate", value: { resourceFilter: { status: [ResourceStatus.ACTIVE] } } } }),
      "parameter_missing params[update]",
    ],
    ["an empty update", updateOf({ status: [ResourceStatus.ACTIVE] }, {}), "parameter_invalid_empty params[update]"],
    ["update of status", updateOf({ status: [ResourceStatus.ACTIVE] }, { status: ResourceStatus.ARCHIVED }), "ok"],
    ["update removing a key", updateOf({ status: [ResourceStatus.ACTIVE] }, { metadata: [{ key: "k", value: "" }] }), "ok"],
    ["update clearing metadata", updateOf({ status: [ResourceStatus.ACTIVE] }, { clearMetadata: true }), "ok"],
    [
      "clear and set at once",
      updateOf({ status: [ResourceStatus.ACTIVE] }, { clearMetadata: true, metadata: [{ key: "k", value: "v" }] }),
      "parameter_invalid params[update][metadata]",
    ],
    [
      "an update value of 501",
      updateOf({ status: [ResourceStatus.ACTIVE] }, { metadata: [{ key: "k", value: "v".repeat(501) }] }),
      "metadata_invalid params[update][metadata][k]",
    ],
    [
      "an update key with a bracket",
      updateOf({ status: [ResourceStatus.ACTIVE] }, { metadata: [{ key: "a]", value: "v" }] }),
      "metadata_invalid params[update][metadata][a]]",
    ],
  ];
  it.each(cases)("%s: %s", (_label, given, expected) => {
    expect(outcome(() => typedParamsOf(given))).toBe(expected);
  });

  it("stores metadata as pairs and keeps only what was given", () => {
    expect(typedParamsOf(updateOf({ metadata: [{ key: "__proto__", value: "x" }], created: { lte: 9n } }, { clearMetadata: true }))).toEqual({
      type: "resources.bulk_update",
      params: { filter: { metadata: [{ k: "__proto__", v: "x" }], created: { lte: 9 } }, update: { metadata: "" } },
    });
    const typed = typedParamsOf(
      params({ kind: { case: "importItems", value: { items: [{ name: "a", status: "nope", metadata: [{ key: "a.b", value: "1" }] }, {}] } } }),
    );
    expect(typed).toEqual({ type: "resources.import", params: { items: [{ name: "a", status: "nope", metadata: [{ k: "a.b", v: "1" }] }, {}] } });
  });
});

describe("import item rules (importItemFields, used by the runner per item)", () => {
  const cases: [string, Parameters<typeof importItemFields>[0], string][] = [
    ["a name", { name: "a" }, "ok"],
    ["no name", {}, "parameter_missing name"],
    ["an empty name", { name: "" }, "parameter_invalid_empty name"],
    ["a name of 200 emoji", { name: "😀".repeat(200) }, "ok"],
    ["a name of 201", { name: "x".repeat(201) }, "string_too_long name"],
    ["an unknown status", { name: "a", status: "gone" }, "parameter_invalid status"],
    ["a key with a bracket", { name: "a", metadata: [{ k: "a[", v: "1" }] }, "metadata_invalid metadata[a[]"],
    ["51 keys", { name: "a", metadata: Array.from({ length: 51 }, (_, i) => ({ k: `k${i}`, v: "1" })) }, "metadata_invalid metadata"],
  ];
  it.each(cases)("%s: %s", (_label, item, expected) => {
    const checked = importItemFields(item);
    expect(checked.ok ? "ok" : `${checked.error.code} ${checked.error.param ?? ""}`.trim()).toBe(expected);
  });

  it("gives the resource fields with defaults, keys as data", () => {
    expect(
      importItemFields({
        name: "a",
        metadata: [
          { k: "$where", v: "1" },
          { k: "gone", v: "" },
        ],
      }),
    ).toEqual({
      ok: true,
      fields: { name: "a", status: "active", metadata: [{ k: "$where", v: "1" }] },
    });
  });
});

describe("JobService", () => {
  it("queues a job once per Idempotency-Key, refuses the key with other params, keeps tenants and modes apart", async () => {
    const { test, live } = await t.newAccount();
    const call = { metadata: { "idempotency-key": "job-key-1" } };
    const first = (await jobs.createJob({ tenant: test, params: importOf(3) }, call)).job!;
    expect(shown(first)).toMatchObject({ id: first.id, object: "job", type: "resources.import", status: "queued", livemode: false, progress: { total: 3 } });
    const again = (await jobs.createJob({ tenant: test, params: importOf(3) }, call)).job!;
    expect(again.id).toBe(first.id);
    await expect(jobs.createJob({ tenant: test, params: importOf(4) }, call)).rejects.toMatchObject({ code: "idempotency_key_reused" });
    // The same key in the other mode is another key.
    const inLive = (await jobs.createJob({ tenant: live, params: importOf(3) }, call)).job!;
    expect(inLive.id).not.toBe(first.id);
    await expect(jobs.getJob({ tenant: live, id: first.id })).rejects.toMatchObject({ code: "resource_missing" });
    const other = await t.newAccount();
    await expect(jobs.getJob({ tenant: other.test, id: first.id })).rejects.toMatchObject({ code: "resource_missing" });
    await expect(jobs.cancelJob({ tenant: other.test, id: first.id })).rejects.toMatchObject({ code: "resource_missing" });
    await expect(jobs.listJobErrors({ tenant: other.test, jobId: first.id })).rejects.toMatchObject({ code: "resource_missing" });
    expect((await jobs.listJobs({ tenant: other.test })).jobs).toEqual([]);
    const stored = await t.db.collection<JobDocument>("jobs").findOne({ _id: first.id });
    expect(stored).toMatchObject({
      status: "queued",
      attempts: 0,
      lease_owner: null,
      lease_until: null,
      epoch: 0,
      version: 0,
      pending_events: [],
      cancel_requested_at: null,
    });
  });

  it("lists newest first with status, type and created filters, both cursors", async () => {
    const { test } = await t.newAccount();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await jobs.createJob({ tenant: test, params: i % 2 ? deleteOf({ ids: [RES(i)] }) : importOf(1) })).job!.id);
    await t.db.collection<JobDocument>("jobs").updateOne({ _id: made[2]! }, { $set: { status: "failed", finished_at: 1 } });
    const ids = async (request: Record<string, unknown>) => (await jobs.listJobs({ tenant: test, ...request })).jobs.map((j) => j.id);
    expect(await ids({})).toEqual([...made].reverse());
    expect(await ids({ type: "resources.bulk_delete" })).toEqual([made[3], made[1]]);
    expect(await ids({ status: "failed" })).toEqual([made[2]]);
    expect(await ids({ status: "queued", type: "resources.import" })).toEqual([made[4], made[0]]);
    await expect(jobs.listJobs({ tenant: test, status: "done" })).rejects.toMatchObject({ code: "parameter_invalid", param: "status" });
    await expect(jobs.listJobs({ tenant: test, type: "resources.nuke" })).rejects.toMatchObject({ code: "parameter_invalid", param: "type" });
    const created: number = shown((await jobs.getJob({ tenant: test, id: made[0]! })).job!).created;
    expect(await ids({ created: { gt: BigInt(created + 100) } })).toEqual([]);
    expect(await ids({ created: { gte: BigInt(created), lt: BigInt(created + 100) } })).toHaveLength(5);
    const page = await jobs.listJobs({ tenant: test, limit: 2 });
    expect(page.hasMore).toBe(true);
    expect(await ids({ limit: 2, startingAfter: page.jobs[1]!.id })).toEqual([made[2], made[1]]);
    expect(await ids({ limit: 2, endingBefore: made[1]! })).toEqual([made[3], made[2]]);
    await expect(jobs.listJobs({ tenant: test, startingAfter: made[0]!, endingBefore: made[1]! })).rejects.toMatchObject({ code: "parameter_invalid" });
  });

  it("an import of 10,000 items is a small job: its items are a file, so a page holds every such job (no byte cut)", async () => {
    const { test } = await t.newAccount();
    const big = params({ kind: { case: "importItems", value: { items: Array.from({ length: 10_000 }, (_, i) => ({ name: `${"n".repeat(90)}${i}` })) } } });
    for (let i = 0; i < 3; i++) await jobs.createJob({ tenant: test, params: big });
    const page = await jobs.listJobs({ tenant: test, limit: 10 });
    expect(page.jobs).toHaveLength(3);
    expect(page.hasMore).toBe(false);
    for (const job of page.jobs) {
      expect(JSON.parse(job.json).params).toEqual({ file: expect.stringMatching(/^file_/) });
      expect(job.json.length).toBeLessThan(1_024);
    }
  });

  it("job.* events of 10,000-item imports are small: every one fits one page, each a few hundred bytes", async () => {
    const { test } = await t.newAccount();
    const big = params({ kind: { case: "importItems", value: { items: Array.from({ length: 10_000 }, (_, i) => ({ name: `${"n".repeat(100)}${i}` })) } } });
    for (let i = 0; i < 4; i++) {
      const job = (await jobs.createJob({ tenant: test, params: big })).job!;
      await jobs.cancelJob({ tenant: test, id: job.id });
    }
    const page = await eventually(async () => {
      const listed = await t.events.listEvents({ tenant: test, type: "job.canceled", limit: 100 });
      expect(listed.events).toHaveLength(4);
      return listed;
    });
    expect(page.hasMore).toBe(false);
    for (const event of page.events) expect(event.dataJson.length).toBeLessThan(2_048);
  });

  describe("cancel in each state", () => {
    it("queued: canceled at once, finished_at set, epoch moved on, job.canceled in the same write; the event shows params with maps", async () => {
      const { test } = await t.newAccount();
      const job = (
        await jobs.createJob({ tenant: test, params: updateOf({ metadata: [{ key: "a.b", value: "1" }] }, { metadata: [{ key: "$set", value: "x" }] }) })
      ).job!;
      // A worker claimed it a moment ago (lease and epoch), but had not started it yet.
      await t.db.collection<JobDocument>("jobs").updateOne({ _id: job.id }, { $set: { lease_owner: "w1", lease_until: Date.now() + 30_000, epoch: 1 } });
      const canceled = (await jobs.cancelJob({ tenant: test, id: job.id }, { metadata: { "rms-request-id": "req_cancel" } })).job!;
      expect(shown(canceled)).toMatchObject({ status: "canceled", result: { updated: 0, errors: [] }, finished_at: expect.any(Number) });
      const stored = await t.db.collection<JobDocument>("jobs").findOne({ _id: job.id });
      expect(stored).toMatchObject({ status: "canceled", epoch: 2, lease_owner: null, lease_until: null, version: 1 });
      // The worker's next write, guarded by its epoch (1), now matches nothing.
      const late = await t.db.collection<JobDocument>("jobs").updateOne({ _id: job.id, epoch: 1 }, { $set: { status: "running" } });
      expect(late.matchedCount).toBe(0);
      const event = await eventually(async () => {
        const { events } = await t.events.listEvents({ tenant: test, type: "job.canceled" });
        expect(events).toHaveLength(1);
        return events[0]!;
      });
      expect(Number(event.sequence)).toBe(1);
      expect(event.requestId).toBe("req_cancel");
      const data = JSON.parse(event.dataJson);
      expect(data.object).toMatchObject({
        id: job.id,
        object: "job",
        status: "canceled",
        params: { filter: { metadata: { "a.b": "1" } }, update: { metadata: { $set: "x" } } },
        result: { updated: 0, errors: [] },
      });
      // The answer and the event are one rendering, byte for byte.
      expect(JSON.stringify(data.object)).toBe(canceled.json);
      await expect(jobs.cancelJob({ tenant: test, id: job.id })).rejects.toMatchObject({ code: "state_conflict" });
    });

    it("running: cancel_requested_at set once, the job and its lease untouched; a second cancel keeps the first time", async () => {
      const { test } = await t.newAccount();
      const job = (await jobs.createJob({ tenant: test, params: importOf(2) })).job!;
      await t.db
        .collection<JobDocument>("jobs")
        .updateOne({ _id: job.id }, { $set: { status: "running", started_at: 5, lease_owner: "w1", lease_until: Date.now() + 30_000, epoch: 1 } });
      const first = shown((await jobs.cancelJob({ tenant: test, id: job.id })).job!);
      expect(first).toMatchObject({ status: "running", cancel_requested_at: expect.any(Number) });
      const stored = await t.db.collection<JobDocument>("jobs").findOne({ _id: job.id });
      expect(stored).toMatchObject({ status: "running", lease_owner: "w1", epoch: 1, cancel_requested_at: first.cancel_requested_at, pending_events: [] });
      await t.db.collection<JobDocument>("jobs").updateOne({ _id: job.id }, { $set: { cancel_requested_at: 7 } });
      const second = shown((await jobs.cancelJob({ tenant: test, id: job.id })).job!);
      expect(second.cancel_requested_at).toBe(7);
      expect((await t.db.collection<JobDocument>("jobs").findOne({ _id: job.id }))!.cancel_requested_at).toBe(7);
    });

    it.each(["succeeded", "failed", "canceled"] as const)("%s: state_conflict, nothing written", async (status) => {
      const { test } = await t.newAccount();
      const job = (await jobs.createJob({ tenant: test, params: importOf(1) })).job!;
      await t.db.collection<JobDocument>("jobs").updateOne({ _id: job.id }, { $set: { status, finished_at: 9 } });
      const before = await t.db.collection<JobDocument>("jobs").findOne({ _id: job.id });
      await expect(jobs.cancelJob({ tenant: test, id: job.id })).rejects.toMatchObject({ code: "state_conflict" });
      expect(await t.db.collection<JobDocument>("jobs").findOne({ _id: job.id })).toEqual(before);
    });

    it("racing a worker's claim, every cancel either cancels the queued job (one event, the claim loses) or marks the running one", async () => {
      const { test } = await t.newAccount();
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) ids.push((await jobs.createJob({ tenant: test, params: importOf(1) })).job!.id);
      const collection = t.db.collection<JobDocument>("jobs");
      // A claim as a worker makes it: one write filtered on `queued`, moving the epoch and version.
      const claim = (id: string) =>
        collection.updateOne(
          { _id: id, status: "queued" },
          { $set: { status: "running", lease_owner: "w1", lease_until: Date.now() + 30_000, started_at: 1 }, $inc: { epoch: 1, version: 1 } },
        );
      const outcomes = await Promise.all(
        ids.map(async (id, i) => {
          // A third claimed before the cancel, a third claimed at the same time, a third never claimed.
          if (i % 3 === 0) await claim(id);
          const [cancel] = await Promise.all([jobs.cancelJob({ tenant: test, id }), i % 3 === 1 ? claim(id) : null]);
          return { id, answer: shown(cancel.job!) };
        }),
      );
      const canceled: string[] = [];
      for (const { id, answer } of outcomes) {
        const stored = (await collection.findOne({ _id: id }))!;
        expect(answer.status).toBe(stored.status);
        if (stored.status === "canceled") {
          canceled.push(id);
          expect(stored.started_at).toBeNull();
          expect(stored.lease_owner).toBeNull();
        } else {
          expect(stored.status).toBe("running");
          expect(stored.cancel_requested_at).toBe(answer.cancel_requested_at);
        }
      }
      expect(outcomes.filter((_, i) => i % 3 === 0).every((o) => o.answer.status === "running")).toBe(true);
      expect(outcomes.filter((_, i) => i % 3 === 2).every((o) => o.answer.status === "canceled")).toBe(true);
      // Exactly one job.canceled event per canceled job, none for the others.
      await eventually(async () => {
        const { events } = await t.events.listEvents({ tenant: test, type: "job.canceled", limit: 100 });
        expect(events.map((e) => JSON.parse(e.dataJson).object.id).sort()).toEqual(canceled.sort());
      });
      // 30 creates, 30 cancels and 20 claims: a busy 2-core machine has taken more than the default 30 s.
    }, 120_000);

    it("an unknown id is resource_missing", async () => {
      const { test } = await t.newAccount();
      await expect(jobs.cancelJob({ tenant: test, id: "job_0000000000000000000000" })).rejects.toMatchObject({ code: "resource_missing" });
    });
  });

  it("lists a job's item errors by index, with index cursors", async () => {
    const { test } = await t.newAccount();
    const job = (await jobs.createJob({ tenant: test, params: importOf(20) })).job!;
    const docs = [3, 1, 12, 10, 2].map((index) => ({
      _id: `${job.id}:${index}`,
      job: job.id,
      account: test.accountId,
      livemode: false,
      index,
      id: null,
      code: "string_too_long",
      param: "name",
      message: "long",
    }));
    await t.db.collection("job_errors").insertMany(docs as never[]);
    const indexes = async (request: Record<string, unknown>) =>
      (await jobs.listJobErrors({ tenant: test, jobId: job.id, ...request })).errorsJson.map((e) => JSON.parse(e).index);
    expect(await indexes({})).toEqual([1, 2, 3, 10, 12]);
    const page = await jobs.listJobErrors({ tenant: test, jobId: job.id, limit: 2 });
    expect(page).toMatchObject({ hasMore: true, jobId: job.id });
    expect(page.errorsJson[0]).toBe('{"index":1,"id":null,"code":"string_too_long","param":"name","message":"long"}');
    expect(await indexes({ limit: 2, startingAfter: 2n })).toEqual([3, 10]);
    expect(await indexes({ limit: 2, endingBefore: 12n })).toEqual([3, 10]);
    expect(await indexes({ startingAfter: 12n })).toEqual([]);
    await expect(jobs.listJobErrors({ tenant: test, jobId: job.id, limit: 101 })).rejects.toMatchObject({ code: "limit_invalid" });
  });
});

describe("retention", () => {
  it("a finished job expires (TTL index) 30 days after it finished, once its event is out, and its errors with it; an unfinished, younger or unrelayed " +
    "job stays", {
    timeout: TTL_TEST_TIMEOUT_MS,
  }, async () => {
    // A database of its own: core's relay would otherwise relay the outbox this test fills.
    const { db, close } = await thingsCollection();
    await fastTtlMonitor(db);
    const store = jobStore(db);
    await store.ensureIndexes();
    const relay = new OutboxRelay(db, { sources: [JOBS_COLLECTION], logger: pino({ level: "silent" }) });
    const { test } = await t.newAccount();
    const tenant = { account: test.accountId, livemode: false };
    const request = { requestId: null, idempotencyKey: null };
    const day = 24 * 60 * 60 * 1000;
    const make = async () => {
      const created = await store.create(tenant, { type: "resources.import", params: { items: [{ name: "r" }] } }, request);
      if (!("doc" in created)) throw new Error("not created");
      const id = created.doc._id;
      await store.errors.insertOne({
        _id: `${id}:0`,
        job: id,
        account: tenant.account,
        livemode: false,
        index: 0,
        id: null,
        code: "c",
        param: null,
        message: "m",
      });
      return id;
    };
    // Finished at a chosen time: the cancel of a queued job takes a clock. A runner's finish gives the job's
    // errors its expiry just before (expireWithJob; runner.test.ts shows it on a real run).
    const finish = async (id: string, atMs: number) => {
      const canceled = await store.cancel(tenant, id, request, UNBOUNDED, () => atMs);
      await expireWithJob(db, id, jobRetainUntil(canceled!.finished_at!));
    };
    const expired = await make();
    await finish(expired, Date.now() - JOB_RETENTION_MS - day);
    const young = await make();
    await finish(young, Date.now() - JOB_RETENTION_MS + day);
    const unrelayed = await store.create(tenant, { type: "resources.import", params: { items: [{ name: "r" }] } }, request);
    if (!("doc" in unrelayed)) throw new Error("not created");
    await store.cancel(tenant, unrelayed.doc._id, request, UNBOUNDED, () => Date.now() - JOB_RETENTION_MS - day);
    const queued = await make();

    await relay.relayDocuments(JOBS_COLLECTION, [expired, young]);
    // The expiry is read on the young job: the expired one may already be gone (the monitor runs every second).
    const youngJob = (await store.collection.findOne({ _id: young }))!;
    expect(youngJob.expires_at).toEqual(new Date(youngJob.finished_at! * 1000 + JOB_RETENTION_MS));
    await eventually(async () => expect(await store.collection.countDocuments({ _id: expired })).toBe(0), { timeoutMs: TTL_WAIT_MS });
    await eventually(async () => expect(await store.errors.countDocuments({ job: expired })).toBe(0), { timeoutMs: TTL_WAIT_MS });
    const left = (await store.collection.find({ account: tenant.account }).toArray()).map((j) => j._id).sort();
    expect(left).toEqual([young, unrelayed.doc._id, queued].sort());
    expect(await store.errors.countDocuments({ job: { $in: [young, queued] } })).toBe(2);
    expect((await store.collection.findOne({ _id: unrelayed.doc._id }))!.pending_events.map((e) => e.type)).toEqual(["job.canceled"]);

    // Its event out, the unrelayed one goes too.
    await relay.relayDocument(JOBS_COLLECTION, unrelayed.doc._id);
    await eventually(async () => expect(await store.collection.countDocuments({ _id: unrelayed.doc._id })).toBe(0), { timeoutMs: TTL_WAIT_MS });
    await close();
  });
});
