import { eventually, startTcpRelay, type TcpRelay } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { pino } from "pino";
import { afterAll, afterEach, beforeAll, expect, inject, it } from "vitest";
import type { Tenant } from "../../caller.js";
import { RESOURCES_COLLECTION } from "../../resources/store.js";
import { eventCounts, jobOf, queueJob, relayAll } from "../../testutil/jobs.js";
import { startWorker, type RunningWorker } from "../../worker/run.js";
import { ensureRunnerIndexes } from "./claim.js";
import { importExecutor } from "./import.js";
import type { RunnerJob } from "./seam.js";
import { jobsTask } from "../../worker/tasks/jobs.js";
import { useTestDatabase } from "../../testutil/database.js";

// A real outage: the worker's driver reaches the database only through a TCP relay the test cuts and
// restores, while the test itself reads the database directly.
const { db, databaseName } = useTestDatabase("jobs-outage", (db) => ensureRunnerIndexes(db.collection<RunnerJob>("jobs")));
let relay: TcpRelay;
let running: RunningWorker | null = null;
beforeAll(async () => {
  relay = await startTcpRelay(inject("mongoUri"));
});
afterEach(async () => {
  await relay.restore();
  await running?.stop();
  running = null;
});
afterAll(async () => {
  await relay.close();
});

const ITEMS = 4_000;
const CHUNK = 100;
let tenants = 0;
const newTenant = (): Tenant => ({ account: `acct_outage${process.pid}x${++tenants}`, livemode: false });

/** A worker through the relay, with a small retry budget, whose log lines the test can wait for. */
async function workerThroughRelay(maxStalled: number): Promise<{ logged: (msg: string) => boolean }> {
  const lines: string[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
  running = await startWorker({
    mongoUri: relay.uri,
    databaseName,
    logger,
    // A long lease: the outage must not end in a takeover by the worker's other lane.
    tasks: [jobsTask({ pollMs: 20, leaseMs: 60_000, executors: { "resources.import": importExecutor(CHUNK) }, retry: { maxStalled, backoffMs: () => 50 } })],
  });
  return { logged: (msg) => lines.some((line) => (JSON.parse(line) as { msg: string }).msg === msg) };
}

async function importQueued(tenant: Tenant): Promise<string> {
  const items = Array.from({ length: ITEMS }, (_, i) => ({ name: `item-${i}`, metadata: [] }));
  return queueJob(db, tenant, { type: "resources.import", params: { items } });
}

/** Cuts the database off from the worker once the import has committed a few chunks (and is not done). */
async function cutMidImport(id: string): Promise<void> {
  await eventually(
    async () => {
      const job = await jobOf(db, id);
      expect(job?.checkpoint?.next ?? 0).toBeGreaterThanOrEqual(3 * CHUNK);
    },
    { timeoutMs: 60_000, intervalMs: 5 },
  );
  await relay.cut();
  expect((await jobOf(db, id))?.status).toBe("running");
}

async function finished(id: string): Promise<RunnerJob> {
  return eventually(
    async () => {
      const job = await jobOf(db, id);
      expect(["succeeded", "failed", "canceled"]).toContain(job?.status);
      return job!;
    },
    { timeoutMs: 90_000, intervalMs: 50 },
  );
}

/** The tenant's resources and their `resource.created` events (after the outboxes are emptied). */
async function committed(tenant: Tenant): Promise<{ names: string[]; created: number[] }> {
  await relayAll(db);
  const docs = await db.collection<{ _id: string; name: string }>(RESOURCES_COLLECTION).find({ account: tenant.account, livemode: tenant.livemode }).toArray();
  const counts = await eventCounts(db, tenant);
  return { names: docs.map((d) => d.name).sort(), created: docs.map((d) => counts.get(`${d._id} resource.created`) ?? 0) };
}

it("an outage shorter than the retry budget: the import goes on after it, every item created once with one event, the retries counted in " +
  "attempts", async () => {
  const tenant = newTenant();
  const id = await importQueued(tenant);
  const worker = await workerThroughRelay(1_000);
  await cutMidImport(id);
  // Down until the worker has failed and retried a step (each try waits for server selection).
  await eventually(() => expect(worker.logged("job step failed; retrying")).toBe(true), { timeoutMs: 30_000, intervalMs: 20 });
  await relay.restore();
  const job = await finished(id);
  expect(job.status).toBe("succeeded");
  expect(job.error).toBeNull();
  expect(job.attempts).toBeGreaterThan(0);
  expect(job.result?.created).toBe(ITEMS);
  expect(job.progress).toEqual({ total: ITEMS, processed: ITEMS, failed: 0, skipped: 0 });
  const { names, created } = await committed(tenant);
  expect(names).toEqual(Array.from({ length: ITEMS }, (_, i) => `item-${i}`).sort());
  expect(created.every((n) => n === 1)).toBe(true);
}, 180_000);

it("an outage past the retry budget: the job fails with service_unavailable once the database answers again; the chunks committed before stay, with " +
  "their events", async () => {
  const tenant = newTenant();
  const id = await importQueued(tenant);
  const maxStalled = 3;
  const worker = await workerThroughRelay(maxStalled);
  await cutMidImport(id);
  // Down until the worker has spent its budget (it cannot write the failure while the database is away).
  await eventually(() => expect(worker.logged("job out of retries")).toBe(true), { timeoutMs: 60_000, intervalMs: 20 });
  await relay.restore();
  const job = await finished(id);
  expect(job.status).toBe("failed");
  expect(job.error?.code).toBe("service_unavailable");
  expect(job.attempts).toBeGreaterThanOrEqual(maxStalled);
  const done = job.result?.created ?? -1;
  expect(done).toBeGreaterThanOrEqual(3 * CHUNK);
  expect(done).toBeLessThan(ITEMS);
  expect(job.progress.processed).toBe(done);
  // The checkpointed chunks stay; the chunk in flight when the database went away may have been
  // committed without the job learning of it (its resources exist, each with its event).
  const { names, created } = await committed(tenant);
  const indexes = names.map((n) => Number(n.slice("item-".length))).sort((a, b) => a - b);
  expect(indexes.slice(0, done)).toEqual(Array.from({ length: done }, (_, i) => i));
  expect(indexes.slice(done).every((i) => i >= done && i < done + CHUNK)).toBe(true);
  expect(created.every((n) => n === 1)).toBe(true);
}, 180_000);
