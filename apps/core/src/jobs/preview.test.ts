import { create } from "@bufbuild/protobuf";
import { JobParamsSchema, JobService, ResourceStatus, type JobParams, type ServiceClient } from "@rms/proto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import { importFile, seedResources } from "../testutil/jobs.js";
import { RESOURCES_COLLECTION } from "../resources/store.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { JOBS_COLLECTION, JOBS_QUEUE } from "./model.js";
import { JOB_ITEMS_COLLECTION } from "./runner/bulk.js";
import { PreviewGate, PREVIEWS_PER_ACCOUNT, previewJob } from "./preview.js";
import { UNBOUNDED } from "../budget.js";
import { CommandLog, explainDuring } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";

let t: TestCore;
let jobs: ServiceClient<typeof JobService>;
beforeAll(async () => {
  t = await startTestCore();
  jobs = t.client(JobService);
});
afterAll(async () => {
  await t?.stop();
});

const params = (init: Parameters<typeof create<typeof JobParamsSchema>>[1]): JobParams => create(JobParamsSchema, init);
// biome-ignore lint/suspicious/noExplicitAny: the preview object as core renders it; each assertion states the shape it expects.
const preview = async (tenant: { accountId: string; livemode: boolean }, given: JobParams): Promise<Record<string, any>> =>
  JSON.parse((await jobs.previewJob({ tenant, params: given })).json);

/** What a job, its items, its events or a queue signal would leave behind. */
async function footprint() {
  return {
    jobs: await t.db.collection(JOBS_COLLECTION).countDocuments({}),
    items: await t.db.collection(JOB_ITEMS_COLLECTION).countDocuments({}),
    events: await t.db.collection(EVENTS_COLLECTION).countDocuments({}),
    outboxes: await t.db.collection(RESOURCES_COLLECTION).countDocuments({ "pending_events.0": { $exists: true } }),
    queue: await JOBS_QUEUE.read(t.db),
  };
}

describe("JobService.PreviewJob (validate_only)", () => {
  it("counts a bulk filter's matches now and lists the first 10 in id order; stores, queues and emits nothing", async () => {
    const { id, test } = await t.newAccount();
    const tenant = { account: id, livemode: false };
    const tagged = await seedResources(t.db, tenant, 25, (i) => ({ status: i % 2 ? "paused" : "active", metadata: i < 12 ? [{ k: "plan", v: "pro" }] : [] }));
    // Other tenants' and other mode's resources never count.
    await seedResources(t.db, { account: id, livemode: true }, 5, () => ({ status: "paused" }));
    await t.db.collection(RESOURCES_COLLECTION).updateOne({ _id: tagged[1] as never }, { $set: { deleted: true } });
    const before = await footprint();

    const paused = await preview(test, params({ kind: { case: "bulkDelete", value: { resourceFilter: { status: [ResourceStatus.PAUSED] } } } }));
    const livePaused = tagged.filter((_, i) => i % 2 === 1 && i !== 1);
    expect(paused).toEqual({
      object: "job_preview",
      type: "resources.bulk_delete",
      livemode: false,
      total: livePaused.length,
      sample: livePaused.sort().slice(0, 10),
      errors: [],
      total_is_lower_bound: false,
    });
    expect(Object.keys(paused)).toEqual(["object", "type", "livemode", "total", "sample", "errors", "total_is_lower_bound"]);

    const update = params({
      kind: {
        case: "bulkUpdate",
        value: { resourceFilter: { metadata: [{ key: "plan", value: "pro" }], status: [ResourceStatus.ACTIVE] }, update: { status: ResourceStatus.ARCHIVED } },
      },
    });
    const proActive = tagged.filter((_, i) => i < 12 && i % 2 === 0);
    expect(await preview(test, update)).toMatchObject({ type: "resources.bulk_update", total: proActive.length, sample: proActive.sort() });
    const byIds = params({ kind: { case: "bulkDelete", value: { resourceFilter: { ids: [tagged[3]!, tagged[1]!, "res_0000000000000000000000"] } } } });
    expect(await preview(test, byIds)).toMatchObject({ total: 1, sample: [tagged[3]] });
    expect(await preview(test, params({ kind: { case: "bulkDelete", value: { resourceFilter: { created: { gte: 0n } } } } }))).toMatchObject({ total: 24 });

    expect(await footprint()).toEqual(before);
    expect(before.jobs).toBe(0);
  });

  it("previews an import: the item count and the failing items by the per-item rules (the first 100), without touching the database", async () => {
    const { test } = await t.newAccount();
    const items = Array.from({ length: 250 }, (_, i) => (i % 2 ? { name: i % 4 === 1 ? "" : "x".repeat(201) } : { name: `ok ${i}`, status: "paused" }));
    items[0] = { name: "bad status", status: "gone" } as never;
    const shown = await preview(test, params({ kind: { case: "importItems", value: { items } } }));
    expect(shown).toMatchObject({ object: "job_preview", type: "resources.import", livemode: false, total: 250, sample: [] });
    expect(shown.errors).toHaveLength(100);
    expect(shown.errors.slice(0, 3)).toEqual([
      { index: 0, line: 1, id: null, code: "parameter_invalid", param: "status", message: "Invalid status: must be one of active, paused or archived." },
      { index: 1, line: 2, id: null, code: "parameter_invalid_empty", param: "name", message: expect.any(String) },
      { index: 3, line: 4, id: null, code: "string_too_long", param: "name", message: expect.any(String) },
    ]);
    expect(shown.errors.at(-1).index).toBe(197);
    expect(await t.db.collection(RESOURCES_COLLECTION).countDocuments({ account: test.accountId })).toBe(0);
  });

  it(
    "previews a file import by reading its first 1,000 rows (a lower bound of a longer file), errors with their line; an unreadable file is 400 on " +
      "params[file]",
    async () => {
      const { id, test } = await t.newAccount();
      const tenant = { account: id, livemode: false };
      const lines = Array.from({ length: 1_500 }, (_, i) => (i === 4 ? '{"name":""}' : i === 7 ? "not json" : JSON.stringify({ name: `p${i}` })));
      const file = await importFile(t.db, tenant, `${lines.join("\n")}\n`, "jsonl");
      const before = await footprint();
      const shown = await preview(test, params({ kind: { case: "importItems", value: { file } } }));
      expect(shown).toMatchObject({ object: "job_preview", type: "resources.import", total: 1_000, sample: [] });
      expect(shown.errors.map((e: { index: number; line: number; code: string }) => [e.index, e.line, e.code])).toEqual([
        [4, 5, "parameter_invalid_empty"],
        [7, 8, "parameter_invalid"],
      ]);
      expect(await footprint()).toEqual(before);
      const noName = await importFile(t.db, tenant, "status\nactive\n", "csv");
      await expect(preview(test, params({ kind: { case: "importItems", value: { file: noName } } }))).rejects.toMatchObject({
        message: expect.stringContaining("params[file]"),
      });
    },
  );

  it("refuses bad params exactly as a create does", async () => {
    const { test } = await t.newAccount();
    const bad: [JobParams, string, string][] = [
      [params({ kind: { case: "bulkDelete", value: { resourceFilter: {} } } }), "parameter_invalid_empty", "params[filter]"],
      [params({ kind: { case: "importItems", value: { items: [] } } }), "parameter_invalid_empty", "params[items]"],
      [params({ kind: { case: "bulkDelete", value: { resourceFilter: { ids: ["res_short"] } } } }), "parameter_invalid", "params[filter][ids][0]"],
      [params({}), "parameter_missing", "type"],
    ];
    for (const [given, code, param] of bad) {
      await expect(jobs.previewJob({ tenant: test, params: given })).rejects.toMatchObject({ code, param });
      await expect(jobs.createJob({ tenant: test, params: given })).rejects.toMatchObject({ code, param });
    }
  });
});

// Issue 31, item 2: what one preview examines is bounded whatever the filter (the count used to walk up to
// 1,000,000 matches, reading every document of a condition the index does not serve), and an account runs at
// most PREVIEWS_PER_ACCOUNT previews at once.
describe("a preview's bounds", () => {
  it("examines at most its window of the index range; past it `total` is a lower bound, flagged", async () => {
    const { id } = await t.newAccount();
    const tenant = { account: id, livemode: false };
    // 3,000 resources with plan=pro, one in 100 of them also env=prod: the index serves `plan`, `env` is checked on each.
    await seedResources(t.db, tenant, 3_000, (i) => ({ metadata: [{ k: "plan", v: "pro" }, ...(i % 100 === 0 ? [{ k: "env", v: "prod" }] : [])] }));
    const filter = {
      metadata: [
        { k: "plan", v: "pro" },
        { k: "env", v: "prod" },
      ],
    };
    const client = new MongoClient(inject("mongoUri"), { monitorCommands: true });
    await client.connect();
    try {
      const log = new CommandLog(client);
      const db = client.db(t.db.databaseName);
      const { value, plans } = await explainDuring(
        client,
        log,
        () => previewJob(db, tenant, { type: "resources.bulk_delete", params: { filter } }, null, UNBOUNDED, 1_000),
        {
          database: t.db.databaseName,
        },
      );
      expect(value).toMatchObject({ total: 10, total_is_lower_bound: true });
      expect(value.sample).toHaveLength(10);
      expect(plans.length).toBeGreaterThan(0);
      for (const plan of plans) expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(1_000);
      // Under the window the count is exact.
      const whole = await previewJob(db, tenant, { type: "resources.bulk_delete", params: { filter } }, null, UNBOUNDED, 5_000);
      expect(whole).toMatchObject({ total: 30, total_is_lower_bound: false });
    } finally {
      await client.close();
    }
  });

  it("runs at most PREVIEWS_PER_ACCOUNT previews of one account and mode at once; the next is 429 rate_limited", async () => {
    const gate = new PreviewGate();
    const tenant = { account: "acct_gate", livemode: false };
    const release: (() => void)[] = [];
    const held = Array.from({ length: PREVIEWS_PER_ACCOUNT }, () => gate.run(tenant, () => new Promise<void>((done) => release.push(done))));
    await expect(gate.run(tenant, async () => "third")).rejects.toMatchObject({ code: "rate_limited" });
    // Another mode and another account are not held up.
    await expect(gate.run({ ...tenant, livemode: true }, async () => "live")).resolves.toBe("live");
    await expect(gate.run({ account: "acct_other", livemode: false }, async () => "other")).resolves.toBe("other");
    for (const done of release) done();
    await Promise.all(held);
    await expect(gate.run(tenant, async () => "again")).resolves.toBe("again");
  });
});
