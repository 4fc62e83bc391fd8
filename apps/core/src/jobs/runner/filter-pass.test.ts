import { eventually } from "@rms/test-db/testkit";
import { expect, it } from "vitest";
import type { Tenant } from "../../caller.js";
import type { MarkedResource } from "../../resources/batch.js";
import { RESOURCES_COLLECTION, ResourceStore } from "../../resources/store.js";
import { jobOf, jobStore, queueJob, seedResources } from "../../testutil/jobs.js";
import { startWorkerProcess } from "../../testutil/process.js";
import { JOBS_COLLECTION, jobDocumentIds } from "../model.js";
import { JOB_ITEMS_COLLECTION, PAGE_SIZE, type JobItemsPage } from "./bulk.js";
import type { RunnerJob } from "./seam.js";
import { useTestDatabase } from "../../testutil/database.js";

// CONTRACT.md section 6, "Fair sharing": evaluating a bulk job's filter is checkpointed work, so cancel and
// SIGTERM take effect within one chunk of it (one `job_items` page), however many resources match. Real
// worker processes (the built worker entry) over 50,000 matching resources.

const MATCHES = 50_000;
const NO_REQUEST = { requestId: null, idempotencyKey: null };

const tenant: Tenant = { account: `acct_filterpass${process.pid}`, livemode: false };
const { db, databaseName } = useTestDatabase("jobs-filter-pass", async (db) => {
  // The indexes core declares: the bulk filter walks `live_status_order`, as in production.
  await new ResourceStore(db).ensureIndexes();
  await jobStore(db).ensureIndexes();
  // The fixture: 50,000 resources of one tenant in core's document shape (as creates store them), inserted directly.
  await seedResources(db, tenant, MATCHES);
});

const everyActive = {
  type: "resources.bulk_update" as const,
  params: { filter: { status: "active" as const }, update: { metadata: [{ k: "pass", v: "1" }] } },
};

/** Matches snapshotted so far (the checkpointed filter pass), read from the job. */
const snapshotted = (job: RunnerJob | null) => job?.checkpoint?.snapshot?.total ?? 0;

/** Waits until the filter pass has checkpointed a few pages, and returns the job then. */
function inFilterPass(id: string): Promise<RunnerJob> {
  return eventually(
    async () => {
      const job = await jobOf(db, id);
      expect(job?.checkpoint?.snapshot?.pages).toBeGreaterThanOrEqual(2);
      expect(job?.checkpoint?.snapshot?.complete).toBe(false);
      return job!;
    },
    { timeoutMs: 60_000, intervalMs: 5 },
  );
}

const applied = () => db.collection<MarkedResource>(RESOURCES_COLLECTION).countDocuments({ account: tenant.account, version: { $gt: 0 } });
const itemsPages = (id: string) => db.collection<JobItemsPage>(JOB_ITEMS_COLLECTION).countDocuments({ _id: jobDocumentIds(id) });

it("cancel during the filter pass of a bulk job over 50,000 matches takes effect within one chunk; nothing is applied and its items pages are " +
  "deleted", async () => {
  const id = await queueJob(db, tenant, everyActive);
  const worker = await startWorkerProcess(databaseName);
  try {
    const before = snapshotted(await inFilterPass(id));
    await jobStore(db).cancel(tenant, id, NO_REQUEST);
    const landed = snapshotted(await jobOf(db, id));
    const job = await eventually(
      async () => {
        const j = await jobOf(db, id);
        expect(j?.status).toBe("canceled");
        return j!;
      },
      { timeoutMs: 60_000, intervalMs: 20 },
    );
    const atEffect = snapshotted(job);
    console.log(
      `filter pass (c), cancel: ${before} of ${MATCHES} matches snapshotted when the cancel was sent, ${landed} when it landed, ${atEffect} when it ` +
        `took effect (+${atEffect - landed}; chunk ${PAGE_SIZE}); items applied ${job.progress.processed}`,
    );
    expect(atEffect - landed).toBeLessThanOrEqual(PAGE_SIZE);
    expect(atEffect).toBeLessThan(MATCHES);
    expect(job.progress).toEqual({ total: null, processed: 0, failed: 0, skipped: 0 });
    expect(job.result).toEqual({ updated: 0, errors: [], results_file: null });
    expect(await applied()).toBe(0);
    expect(await itemsPages(id)).toBe(0);
  } finally {
    expect(await worker.stop()).toBe(0);
  }
}, 180_000);

it("SIGTERM during the filter pass: the worker checkpoints the page in hand, releases the job and exits; the next worker goes on from that page", async () => {
  const id = await queueJob(db, tenant, everyActive);
  // A lease of 10 minutes: only the release lets the next worker in now.
  const env = { JOBS_LEASE_MS: "600000" };
  const first = await startWorkerProcess(databaseName, env);
  const before = snapshotted(await inFilterPass(id));
  const signalled = Date.now();
  expect(await first.stop()).toBe(0);
  const exitedMs = Date.now() - signalled;
  const released = (await jobOf(db, id))!;
  const atEffect = snapshotted(released);
  console.log(
    `filter pass (c), SIGTERM: ${before} of ${MATCHES} matches snapshotted when the signal was sent, ${atEffect} at the release ` +
      `(+${atEffect - before}; chunk ${PAGE_SIZE}); exit ${exitedMs} ms after the signal; items applied ${released.progress.processed}`,
  );
  // The page in flight when the signal came, and at most one more checkpointed between the read above and the signal.
  expect(atEffect - before).toBeLessThanOrEqual(2 * PAGE_SIZE);
  expect(released).toMatchObject({ status: "running", lease_owner: null, attempts: 0 });
  expect(released.checkpoint?.snapshot).toMatchObject({ complete: false, pages: atEffect / PAGE_SIZE });
  expect(await itemsPages(id)).toBe(atEffect / PAGE_SIZE);
  // The next worker claims the released job at once and goes on after the last page (no page is taken twice).
  const second = await startWorkerProcess(databaseName, env);
  try {
    const further = await eventually(
      async () => {
        const job = await jobOf(db, id);
        expect(job?.checkpoint?.snapshot?.pages).toBeGreaterThan(atEffect / PAGE_SIZE);
        return job!;
      },
      { timeoutMs: 60_000, intervalMs: 5 },
    );
    expect(further).toMatchObject({ attempts: 0, epoch: 2 });
    const pages = await db
      .collection<JobItemsPage>(JOB_ITEMS_COLLECTION)
      .find({ _id: jobDocumentIds(id) })
      .toArray();
    const ids = pages.sort((a, b) => a.page - b.page).flatMap((p) => p.ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    await jobStore(db).cancel(tenant, id, NO_REQUEST);
    await eventually(async () => expect((await db.collection<RunnerJob>(JOBS_COLLECTION).findOne({ _id: id }))?.status).toBe("canceled"), {
      timeoutMs: 60_000,
    });
  } finally {
    expect(await second.stop()).toBe(0);
  }
}, 180_000);
