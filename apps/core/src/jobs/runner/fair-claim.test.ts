import { eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { describe, expect, inject, it } from "vitest";
import type { Tenant } from "../../caller.js";
import { LeaseQueue } from "../../storage/lease.js";
import { jobFiles, jobOf, jobRunOptions, jobStore, queueJob } from "../../testutil/jobs.js";
import { startWorker } from "../../worker/run.js";
import { jobsTask } from "../../worker/tasks/jobs.js";
import { JOBS_COLLECTION, type RequestedParams } from "../model.js";
import { JobStore } from "../store.js";
import { claimJob, ensureRunnerIndexes, type Claimed, type TenantKey } from "./claim.js";
import { importExecutor } from "./import.js";
import { runJob } from "./run.js";
import type { Executor, RunnerJob } from "./seam.js";
import { useTestDatabase } from "../../testutil/database.js";

// CONTRACT.md section 6, "Fair sharing": at most JOBS_QUEUED_PER_ACCOUNT unfinished jobs per account and
// mode, and a tenant with no job running is started before a further job of a tenant with one running,
// whatever the busy tenants have queued.

const { db, databaseName } = useTestDatabase("jobs-fair", async (db) => {
  await ensureRunnerIndexes(db.collection<RunnerJob>(JOBS_COLLECTION));
  await jobStore(db).ensureIndexes();
});

const NO_REQUEST = { requestId: null, idempotencyKey: null };
const ONE: RequestedParams = { type: "resources.import", params: { items: [{ name: "x" }] } };
let tenants = 0;
// Accounts in creation order: the claim's tenant order is the order of these ids.
const newTenant = (): Tenant => ({ account: `acct_fair${process.pid}x${String(++tenants).padStart(3, "0")}`, livemode: false });
const jobs = () => db.collection<RunnerJob>(JOBS_COLLECTION);

/** Queues `count` jobs of the tenant, as the API does. */
async function flood(tenant: Tenant, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(await queueJob(db, tenant, ONE));
  return ids;
}

/** Cancels what the tenants left queued or running, so the next test's claims see only their own. */
async function cancelAll(...of: Tenant[]): Promise<void> {
  await jobs().updateMany(
    { account: { $in: of.map((t) => t.account) }, status: { $in: ["queued", "running"] } },
    { $set: { status: "canceled", lease_owner: null }, $unset: { run_slot: "", queue_slot: "" } },
  );
}

describe("JOBS_QUEUED_PER_ACCOUNT", () => {
  it(
    "the next create past 100 unfinished jobs is refused; 20 concurrent " + "creates at the limit do not pass it, nor 20 racing for the last 5 places",
    async () => {
      const store = jobStore(db);
      const tenant = newTenant();
      const other = newTenant();
      await flood(tenant, 95);
      const racing = await Promise.all(Array.from({ length: 20 }, () => store.create(tenant, ONE, NO_REQUEST)));
      expect(racing.filter((r) => "doc" in r)).toHaveLength(5);
      expect(racing.filter((r) => "limitReached" in r)).toHaveLength(15);
      const atLimit = await Promise.all(Array.from({ length: 20 }, () => store.create(tenant, ONE, NO_REQUEST)));
      expect(atLimit.every((r) => "limitReached" in r)).toBe(true);
      const held = await jobs()
        .find({ account: tenant.account, queue_slot: { $exists: true } })
        .toArray();
      expect(held.map((j) => j.queue_slot).sort((a, b) => a! - b!)).toEqual([...Array(100).keys()]);
      // Per account and mode: the same account's live mode and another account are not limited by it.
      expect("doc" in (await store.create({ ...tenant, livemode: true }, ONE, NO_REQUEST))).toBe(true);
      expect("doc" in (await store.create(other, ONE, NO_REQUEST))).toBe(true);
      await cancelAll(tenant, other, { ...tenant, livemode: true });
    },
  );

  // A retried keyed create at the limit replays its first job: the key's record answers before the store is asked
  // (grpc/idempotent.ts; jobs.test.ts "queues a job once per Idempotency-Key").
  it("a place is given back by the write that finishes the job (the cancel of a queued job, the runner's finish)", async () => {
    const store = new JobStore(db, () => {}, 3, jobFiles(db));
    const tenant = newTenant();
    await queueWith(store, tenant);
    const second = await queueWith(store, tenant);
    await queueWith(store, tenant);
    expect(await store.create(tenant, ONE, NO_REQUEST)).toEqual({ limitReached: true });
    // Cancel of a queued job: its place is free with that write.
    await store.cancel(tenant, second, NO_REQUEST);
    expect((await jobOf(db, second))?.queue_slot).toBeUndefined();
    const third = await store.create(tenant, ONE, NO_REQUEST);
    expect("doc" in third).toBe(true);
    expect(await store.create(tenant, ONE, NO_REQUEST)).toEqual({ limitReached: true });
    // The runner's finish: the job runs to its end and its place is free.
    const owner = "fair-test";
    const leases = new LeaseQueue<RunnerJob>(jobs(), { owner, leaseMs: 60_000 });
    const claimed = (await claimJob(jobs(), leases, owner, 60_000, 2))!;
    expect(claimed.job.account).toBe(tenant.account);
    await runJob(claimed.job, importExecutor(), jobRunOptions({ db, owner, leases }));
    const finished = await jobOf(db, claimed.job._id);
    expect(finished).toMatchObject({ status: "succeeded" });
    expect(finished?.queue_slot).toBeUndefined();
    expect(finished?.run_slot).toBeUndefined();
    expect("doc" in (await store.create(tenant, ONE, NO_REQUEST))).toBe(true);
    await cancelAll(tenant);
  });
});

async function queueWith(store: JobStore, tenant: Tenant): Promise<string> {
  const created = await store.create(tenant, ONE, NO_REQUEST);
  if (!("doc" in created)) throw new Error("not created");
  return created.doc._id;
}

describe("the fair claim", () => {
  // Two floods of 100 jobs and their claims: well within a second alone, far longer on a loaded machine.
  it("a tenant with no job running is claimed before a further job of a tenant with one running, whatever the busy ones have queued", async () => {
    // Two accounts each at their limit of 100 queued (the old claim read the 200 oldest unfinished jobs of
    // all tenants: these hid every later job), then a quiet account with one job.
    const [a, b, quiet] = [newTenant(), newTenant(), newTenant()];
    await flood(a, 100);
    await flood(b, 100);
    const [small] = await flood(quiet, 1);
    const leases = (owner: string) => new LeaseQueue<RunnerJob>(jobs(), { owner, leaseMs: 60_000 });
    // Claims in turn as one worker makes them (its rotation: after the tenant of its last claim).
    let after: TenantKey | null = null;
    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      const claimed: Claimed = (await claimJob(jobs(), leases(`w${i}`), `w${i}`, 60_000, 2, after))!;
      order.push(claimed.job.account);
      after = claimed.job;
    }
    // Every tenant's first job before any second one; the quiet tenant's job third, not after 200.
    expect(order.slice(0, 3)).toEqual([a.account, b.account, quiet.account]);
    expect(order[3]).toBe(a.account);
    expect((await jobOf(db, small!))?.status).toBe("running");
    // A newcomer's job goes before the second slots of the tenants already running, even from a fresh worker.
    const [late] = await flood(newTenant(), 1);
    expect((await claimJob(jobs(), leases("w5"), "w5", 60_000, 2))?.job._id).toBe(late);
    // JOBS_PER_ACCOUNT still holds: `a` has 2 running, `b` and `quiet` 1; the claim gives the free slots to those.
    const rest = [await claimJob(jobs(), leases("w6"), "w6", 60_000, 2), await claimJob(jobs(), leases("w7"), "w7", 60_000, 2)];
    expect(rest.map((c) => c?.job.account)).toEqual([b.account, undefined]);
    const running = await jobs().countDocuments({ account: a.account, status: "running" });
    expect(running).toBe(2);
    await cancelAll(a, b, quiet);
  }, 120_000);

  it(
    "(b) one account at its limit of queued jobs: another account's small job starts and finishes on a real worker while the first one's backlog is " +
      "still queued",
    async () => {
      const busy = newTenant();
      const other = newTenant();
      const ids = await flood(busy, 100);
      expect(await jobStore(db).create(busy, ONE, NO_REQUEST)).toEqual({ limitReached: true });
      const createdAt = Date.now();
      const [small] = await flood(other, 1);
      // The order in which the worker starts jobs, and when the small one started.
      const started: string[] = [];
      let smallStartedAt = 0;
      const inner = importExecutor();
      const recording: Executor = {
        step(run, state) {
          if (state.next === 0 && !started.includes(run.job._id)) started.push(run.job._id);
          if (run.job._id === small && smallStartedAt === 0) smallStartedAt = Date.now();
          return inner.step(run, state);
        },
      };
      const worker = await startWorker({
        mongoUri: inject("mongoUri"),
        databaseName,
        tasks: [jobsTask({ pollMs: 20, executors: { "resources.import": recording } })],
      });
      try {
        const done = await eventually(
          async () => {
            const job = await jobOf(db, small!);
            expect(job?.status).toBe("succeeded");
            return job!;
          },
          { timeoutMs: 60_000, intervalMs: 20 },
        );
        const stillQueued = await jobs().countDocuments({ account: busy.account, status: "queued" });
        const busyStartedBefore = started.indexOf(small!);
        console.log(
          `fair claim (b): the other account's job was the worker's start number ${busyStartedBefore + 1} (after ${busyStartedBefore} of the busy ` +
            `account's), waited ${smallStartedAt - createdAt} ms from create to start; ${stillQueued} of the busy account's 100 still queued when it succeeded`,
        );
        expect(done.status).toBe("succeeded");
        // At most one of the busy account's jobs started before it (the worker's other lane), never its backlog.
        expect(busyStartedBefore).toBeLessThanOrEqual(1);
        expect(stillQueued).toBeGreaterThan(0);
        expect(ids.length).toBe(100);
      } finally {
        await worker.stop();
      }
      await cancelAll(busy, other);
    },
  );
});
