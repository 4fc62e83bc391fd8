import { eventually } from "@rms/test-db/testkit";
import { expect, it } from "vitest";
import type { Tenant } from "../../caller.js";
import type { MarkedResource } from "../../resources/batch.js";
import { RESOURCES_COLLECTION } from "../../resources/store.js";
import { eventCounts, fileBytes, importFile, jobOf, jsonLines, queueJob, relayAll, seedResources } from "../../testutil/jobs.js";
import { startWorkerProcess } from "../../testutil/process.js";
import { useTestDatabase } from "../../testutil/database.js";
import type { RunnerJob } from "./seam.js";

// Real worker processes (the built worker entry), killed for real: the takeover and SIGTERM promises of
// CONTRACT.md section 6. A short lease so a dead worker's job is taken over within seconds.
const WORKER_ENV = { JOBS_LEASE_MS: "1500" };

const { db, databaseName } = useTestDatabase("jobs-takeover");

let tenants = 0;
const newTenant = (): Tenant => ({ account: `acct_takeover${process.pid}x${++tenants}`, livemode: false });
const resources = () => db.collection<MarkedResource>(RESOURCES_COLLECTION);

/** Waits until the job has committed some of its items, but not all. */
async function midway(id: string): Promise<RunnerJob> {
  return eventually(
    async () => {
      const job = await jobOf(db, id);
      expect(job?.progress.processed).toBeGreaterThan(0);
      return job!;
    },
    { timeoutMs: 60_000, intervalMs: 10 },
  );
}

async function succeeded(id: string): Promise<RunnerJob> {
  return eventually(
    async () => {
      const job = await jobOf(db, id);
      expect(job?.status).toBe("succeeded");
      return job!;
    },
    { timeoutMs: 120_000, intervalMs: 100 },
  );
}

/**
 * A worker process killed (SIGKILL) once the job is midway, then a second one that finishes it: the first worker,
 * the job as the first saw it midway, as it stood right after the kill, and as it succeeded.
 */
async function killMidwayThenFinish(id: string): Promise<{ first: { workerId: string }; before: RunnerJob; atKill: RunnerJob; job: RunnerJob }> {
  const first = await startWorkerProcess(databaseName, WORKER_ENV);
  const before = await midway(id);
  await first.kill();
  const atKill = (await jobOf(db, id))!;
  const second = await startWorkerProcess(databaseName, WORKER_ENV);
  const job = await succeeded(id);
  await second.stop();
  return { first, before, atKill, job };
}

it("SIGKILL mid-import: the next worker takes the job over after the lease and creates exactly the items, each with one resource.created event", async () => {
  const tenant = newTenant();
  const total = 6_000;
  const id = await queueJob(db, tenant, { type: "resources.import", params: { items: Array.from({ length: total }, (_, i) => ({ name: `k${i}` })) } });
  const { first, before, atKill, job } = await killMidwayThenFinish(id);
  expect(atKill.status).toBe("running");
  expect(atKill.progress.processed).toBeLessThan(total);
  expect(before.lease_owner).toBe(first.workerId);
  expect(job.attempts).toBe(1); // the dead worker's attempt
  expect(job.epoch).toBe(2);
  expect(job.result).toEqual({ created: total, errors: [], results_file: expect.stringMatching(/^file_/) });
  const names = (
    await resources()
      .find({ account: tenant.account }, { projection: { name: 1 } })
      .toArray()
  ).map((r) => r.name);
  expect(names).toHaveLength(total);
  expect(new Set(names).size).toBe(total);
  await relayAll(db);
  const counts = await eventCounts(db, tenant);
  expect(counts.size).toBe(total);
  expect([...counts.values()].every((n) => n === 1)).toBe(true);
}, 180_000);

it("SIGKILL mid-bulk-update: every matched resource is updated once (version 1, one resource.updated event)", async () => {
  const tenant = newTenant();
  const total = 4_000;
  await seedResources(db, tenant, total);
  const id = await queueJob(db, tenant, {
    type: "resources.bulk_update",
    params: { filter: { status: "active" }, update: { status: "paused", metadata: [{ k: "bulk", v: "1" }] } },
  });
  const { atKill, job } = await killMidwayThenFinish(id);
  expect(atKill.progress.processed).toBeLessThan(total);
  expect(job.result).toEqual({ updated: total, errors: [], results_file: expect.stringMatching(/^file_/) });
  expect(job.progress).toEqual({ total, processed: total, failed: 0, skipped: 0 });
  const all = await resources().find({ account: tenant.account }).toArray();
  expect(all.filter((r) => r.version === 1 && r.status === "paused")).toHaveLength(total);
  await relayAll(db);
  const counts = await eventCounts(db, tenant);
  expect(all.every((r) => counts.get(`${r._id} resource.updated`) === 1)).toBe(true);
}, 180_000);

it("SIGTERM: the worker checkpoints, releases the job at once and exits 0; the next worker continues without waiting for a lease or counting an " +
  "attempt", async () => {
  const tenant = newTenant();
  const total = 6_000;
  const id = await queueJob(db, tenant, { type: "resources.import", params: { items: Array.from({ length: total }, (_, i) => ({ name: `t${i}` })) } });
  const first = await startWorkerProcess(databaseName, { ...WORKER_ENV, JOBS_LEASE_MS: "600000" });
  await midway(id);
  expect(await first.stop()).toBe(0);
  const released = (await jobOf(db, id))!;
  expect(released.status).toBe("running");
  expect(released.lease_owner).toBeNull();
  expect(released.progress.processed).toBeGreaterThan(0);
  expect(released.checkpoint?.next).toBe(released.progress.processed);
  // What was checkpointed is what exists: nothing written after the last checkpoint.
  expect(await resources().countDocuments({ account: tenant.account })).toBe(released.progress.processed);
  // A lease of 10 minutes: only the release lets the next worker in now.
  const second = await startWorkerProcess(databaseName, { ...WORKER_ENV, JOBS_LEASE_MS: "600000" });
  const job = await succeeded(id);
  await second.stop();
  expect(job.attempts).toBe(0);
  expect(job.result?.created).toBe(total);
  expect(await resources().countDocuments({ account: tenant.account })).toBe(total);
}, 180_000);

it("SIGKILL mid-import from a CSV file: each row created once, the results file has each row's line once, in order", async () => {
  const tenant = newTenant();
  const total = 8_000;
  const csv = `name,metadata[n]\r\n${Array.from({ length: total }, (_, i) => (i % 1_000 === 999 ? `,${i}` : `"f, ${i}",${i}`)).join("\r\n")}\r\n`;
  const file = await importFile(db, tenant, csv, "csv");
  const id = await queueJob(db, tenant, { type: "resources.import", params: { file } });
  const { atKill, job } = await killMidwayThenFinish(id);
  expect(atKill.progress.processed).toBeLessThan(total);
  expect(job.attempts).toBe(1);
  const failed = total / 1_000;
  expect(job.progress).toEqual({ total, processed: total, failed, skipped: 0 });
  const made = await resources()
    .find({ account: tenant.account }, { projection: { name: 1 } })
    .toArray();
  expect(made).toHaveLength(total - failed);
  expect(new Set(made.map((r) => r.name)).size).toBe(total - failed);
  const results = jsonLines((await fileBytes(db, tenant, job.result!.results_file!)).bytes);
  expect(results.map((r) => r["line"])).toEqual(Array.from({ length: total }, (_, i) => i + 2));
  expect(new Set(results.flatMap((r) => (r["id"] ? [r["id"]] : []))).size).toBe(total - failed);
  await relayAll(db);
  const counts = await eventCounts(db, tenant);
  expect(counts.size).toBe(total - failed);
  expect([...counts.values()].every((n) => n === 1)).toBe(true);
}, 180_000);

it("SIGKILL mid-export: the finished file holds every resource once, none missing", async () => {
  const tenant = newTenant();
  const total = 30_000;
  const ids = await seedResources(db, tenant, total);
  const id = await queueJob(db, tenant, { type: "resources.export", params: { filter: {}, format: "jsonl" } });
  const { job } = await killMidwayThenFinish(id);
  expect(job.attempts).toBe(1);
  expect(job.result).toMatchObject({ exported: total });
  const rows = jsonLines((await fileBytes(db, tenant, job.result!.file!)).bytes);
  expect(rows.map((r) => r["id"])).toEqual([...ids].sort());
}, 180_000);
