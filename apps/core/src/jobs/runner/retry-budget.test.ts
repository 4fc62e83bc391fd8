// The retry budget against workers that die (docs/jobs.md, "Cancel, finish, failure, retries"): a takeover counts as an
// attempt, but only attempts in a row without a checkpoint count against the budget, and the step after a takeover is
// smaller. Driven at the runner's own layer (claimJob, runJob) on a real database: a "death" is a run left hanging
// before its checkpoint, its lease then run out, and the next claim a takeover, as after a SIGKILL.
import { afterAll, expect, it } from "vitest";
import type { Tenant } from "../../caller.js";
import type { MarkedResource } from "../../resources/batch.js";
import { RESOURCES_COLLECTION } from "../../resources/store.js";
import { FencedOut } from "../../storage/byte-store.js";
import { LeaseQueue } from "../../storage/lease.js";
import { fileBytes, jobOf, jobRunOptions, jsonLines, queueJob } from "../../testutil/jobs.js";
import { claimJob, ensureRunnerIndexes } from "./claim.js";
import { importExecutor } from "./import.js";
import { runJob } from "./run.js";
import type { Checkpoint, Executor, RunnerJob } from "./seam.js";
import { stepRows } from "./step-size.js";
import { useTestDatabase } from "../../testutil/database.js";

const LEASE_MS = 60_000;

const { db } = useTestDatabase("jobs-retry-budget", (db) => ensureRunnerIndexes(db.collection<RunnerJob>("jobs")));
afterAll(() => {
  for (const release of hanging.splice(0)) release();
});

let tenants = 0;
const newTenant = (): Tenant => ({ account: `acct_budget${process.pid}x${++tenants}`, livemode: false });
const jobs = () => db.collection<RunnerJob>("jobs");

/** Runs left hanging ("dead" workers): released at the end, when they find their lease gone and stop. */
const hanging: (() => void)[] = [];

/**
 * An executor whose worker dies after `goodSteps` steps of this attempt: the next step does its work (resources,
 * results part) and then hangs before its checkpoint, as a worker SIGKILLed there. `died` resolves then.
 */
function dyingAfter(inner: Executor, goodSteps: number): { executor: Executor; died: Promise<Checkpoint> } {
  let taken = 0;
  let signal!: (state: Checkpoint) => void;
  const died = new Promise<Checkpoint>((resolve) => (signal = resolve));
  const executor: Executor = {
    async step(run, state) {
      const next = await inner.step(run, state);
      if (taken++ < goodSteps || next === null) return next;
      signal(state);
      await new Promise<void>((resolve) => hanging.push(resolve));
      throw new FencedOut("the test's dead worker, released at the end");
    },
    ...(inner.finish ? { finish: inner.finish } : {}),
  };
  return { executor, died };
}

/** Claims the job as a new worker would (the dead one's lease made to run out first); null when nothing is claimable. */
async function claimAfterDeath(jobId: string, owner: string) {
  await jobs().updateOne({ _id: jobId, status: "running" }, { $set: { lease_until: Date.now() - 1 } });
  return claimJob(jobs(), new LeaseQueue(jobs(), { owner, leaseMs: LEASE_MS }), owner, LEASE_MS, 100);
}

function runOptions(owner: string, maxStalled: number) {
  const leases = new LeaseQueue<RunnerJob>(jobs(), { owner, leaseMs: LEASE_MS });
  return jobRunOptions({ db, owner, leaseMs: LEASE_MS, leases, retry: { maxStalled, backoffMs: () => 0 } });
}

it("a step's rows halve for each attempt without progress, down to a floor, and never pass the chunk", () => {
  expect([0, 1, 2, 3, 6, 40].map((stalled) => stepRows(undefined, 1_000, stalled))).toEqual([1_000, 500, 250, 125, 25, 25]);
  expect(stepRows(400, 1_000, 1)).toBe(200);
  expect(stepRows(5_000, 1_000, 0)).toBe(1_000);
  expect(stepRows(undefined, 10, 3)).toBe(10);
});

it(
  "workers dying after every checkpoint: more takeovers than the budget, yet the import succeeds (each attempt made progress), every row once in the " +
    "resources and the results file",
  async () => {
    const tenant = newTenant();
    const total = 400;
    const maxStalled = 2;
    const id = await queueJob(db, tenant, { type: "resources.import", params: { items: Array.from({ length: total }, (_, i) => ({ name: `budget-${i}` })) } });
    const inner = importExecutor(100);
    let claimed = await claimJob(jobs(), new LeaseQueue(jobs(), { owner: "w0", leaseMs: LEASE_MS }), "w0", LEASE_MS, 100);
    let deaths = 0;
    const stepsAfterTakeover: number[] = [];
    for (let worker = 1; ; worker++) {
      expect(claimed?.job._id).toBe(id);
      const before = claimed!.job.checkpoint!.next;
      // Each worker does one step and checkpoints it, does the next one's work, and dies before its checkpoint.
      const { executor, died } = dyingAfter(inner, 1);
      const run = runJob(claimed!.job, executor, runOptions(`w${worker - 1}`, maxStalled));
      const outcome = await Promise.race([died.then(() => "died" as const), run.then(() => "ended" as const)]);
      if (outcome === "ended") break;
      deaths++;
      const after = (await jobOf(db, id))!;
      if (worker > 1 && before > 0) stepsAfterTakeover.push(after.checkpoint!.next - before);
      claimed = await claimAfterDeath(id, `w${worker}`);
      expect(claimed?.takeover).toBe(true);
      expect(claimed?.job.stalled).toBe(1);
    }
    const job = (await jobOf(db, id))!;
    expect(deaths).toBeGreaterThan(maxStalled);
    expect(job.status).toBe("succeeded");
    expect(job.attempts).toBe(deaths);
    expect(job.result?.created).toBe(total);
    // A step right after a takeover took at most half a chunk (less if steps were slow): the checkpoint moved by 1 to 50 of the chunk's 100 rows.
    expect(stepsAfterTakeover.length).toBeGreaterThan(0);
    expect(stepsAfterTakeover.every((n) => n > 0 && n <= 50)).toBe(true);
    // The dead workers' rows (a whole chunk each, past the checkpoint) and their redos in half steps: one resource per row.
    const names = (await db.collection<MarkedResource>(RESOURCES_COLLECTION).find({ account: tenant.account }).toArray()).map((r) => r.name);
    expect(names).toHaveLength(total);
    expect(new Set(names).size).toBe(total);
    // The results file: one line per row, in row order, the dead workers' parts rewritten in place.
    const results = jsonLines((await fileBytes(db, tenant, job.result!.results_file!)).bytes);
    expect(results.map((r) => r["line"])).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  },
);

it("workers dying before any checkpoint: the job fails with service_unavailable once the attempts in a row without progress reach the budget", async () => {
  const tenant = newTenant();
  const maxStalled = 3;
  const id = await queueJob(db, tenant, { type: "resources.import", params: { items: Array.from({ length: 50 }, (_, i) => ({ name: `stall-${i}` })) } });
  const inner = importExecutor(100);
  // The scan, done once, so the deaths below come mid-chunk (rows created, no checkpoint).
  let claimed = await claimJob(jobs(), new LeaseQueue(jobs(), { owner: "s0", leaseMs: LEASE_MS }), "s0", LEASE_MS, 100);
  let worker = 0;
  for (; ; worker++) {
    const { executor, died } = dyingAfter(inner, worker === 0 ? 1 : 0);
    const run = runJob(claimed!.job, executor, runOptions(`s${worker}`, maxStalled));
    const outcome = await Promise.race([died.then(() => "died" as const), run.then(() => "ended" as const)]);
    if (outcome === "ended") break;
    claimed = await claimAfterDeath(id, `s${worker + 1}`);
    expect(claimed?.job.stalled).toBe(worker + 1);
  }
  const job = (await jobOf(db, id))!;
  expect(worker).toBe(maxStalled);
  expect(job.status).toBe("failed");
  expect(job.error?.code).toBe("service_unavailable");
  expect(job.attempts).toBe(maxStalled);
  // Nothing was checkpointed past the scan, yet each dead worker's rows exist once (the redo derived the same ids).
  expect(job.result?.created).toBe(0);
  const names = (await db.collection<MarkedResource>(RESOURCES_COLLECTION).find({ account: tenant.account }).toArray()).map((r) => r.name);
  expect(new Set(names).size).toBe(names.length);
  expect(names.length).toBeGreaterThan(0);
});
