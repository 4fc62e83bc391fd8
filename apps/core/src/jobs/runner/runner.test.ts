import { IDEMPOTENCY_RETENTION_MS } from "@rms/proto";
import { eventually } from "@rms/test-db/testkit";
import type { ClientSession } from "mongodb";
import { describe, expect, it } from "vitest";
import type { Tenant } from "../../caller.js";
import { idTimeMs } from "../../ids.js";
import type { MarkedResource } from "../../resources/batch.js";
import { RESOURCES_COLLECTION } from "../../resources/store.js";
import { LeaseQueue } from "../../storage/lease.js";
import { EVENTS_COLLECTION } from "../../storage/relay.js";
import { eventCounts, handRun, jobOf, jobStore, finishedJob, jobsWorker, queueJob, relayAll, seedResources } from "../../testutil/jobs.js";
import { useTestDatabase } from "../../testutil/database.js";
import { jobDocumentIds, jobRetainUntil, type JobErrorDocument, type RequestedParams } from "../model.js";
import { bulkExecutor, JOB_ITEMS_COLLECTION, pageId, type JobItemsPage } from "./bulk.js";
import { claimJob, ensureRunnerIndexes } from "./claim.js";
import { importExecutor } from "./import.js";
import type { Checkpoint, JobRun, RunnerJob } from "./seam.js";

const { db, databaseName } = useTestDatabase("jobs-runner", (db) => ensureRunnerIndexes(db.collection<RunnerJob>("jobs")));

let tenants = 0;
const newTenant = (): Tenant => ({ account: `acct_runner${process.pid}x${++tenants}`, livemode: false });
const resources = () => db.collection<MarkedResource>(RESOURCES_COLLECTION);

/** Thrown to leave a transaction's callback as a killed process leaves it (the test opens the transaction again by hand). */
class Abandoned extends Error {}

/** A job claimed by a test owner, and its run as an executor sees it, for driving executors step by step. */
async function claimedRun(owner = `test-${Math.random()}`): Promise<{ run: JobRun; state: Checkpoint; written: string[] }> {
  const jobs = db.collection<RunnerJob>("jobs");
  const claimed = await claimJob(jobs, new LeaseQueue(jobs, { owner, leaseMs: 60_000 }), owner, 60_000, 100);
  const written: string[] = [];
  return { run: handRun(db, claimed!.job, owner, written), state: claimed!.job.checkpoint!, written };
}

describe("resources.import", () => {
  it(
    "creates every valid item once, each with its resource.created event; invalid items fail alone, in progress, job_errors and result.errors; the " +
      "job.succeeded event is in the job's outbox",
    async () => {
      const tenant = newTenant();
      const items = Array.from({ length: 1_203 }, (_, i) => ({ name: `item-${i}`, metadata: [{ k: "i", v: String(i) }] }));
      items[5] = { name: "", metadata: [] };
      items[700] = { name: "ok", status: "frozen" } as never;
      items[1_202] = { metadata: [] } as never;
      const id = await queueJob(db, tenant, { type: "resources.import", params: { items } });
      const w = await jobsWorker(databaseName);
      const job = await finishedJob(db, id);
      await w.stop();
      expect(job.status).toBe("succeeded");
      expect(job.progress).toEqual({ total: 1_203, processed: 1_203, failed: 3, skipped: 0 });
      expect(job.result?.created).toBe(1_200);
      expect(job.result?.errors.map((e) => [e.index, e.code, e.param])).toEqual([
        [5, "parameter_invalid_empty", "name"],
        [700, "parameter_invalid", "status"],
        [1_202, "parameter_missing", "name"],
      ]);
      expect(await db.collection("job_errors").countDocuments({ job: id })).toBe(3);
      expect(job.started_at).not.toBeNull();
      expect(job.finished_at).not.toBeNull();
      expect(job.lease_owner).toBeNull();
      expect(job.run_slot).toBeUndefined();
      const created = await resources().find({ account: tenant.account }).toArray();
      expect(created).toHaveLength(1_200);
      expect(new Set(created.map((r) => r.name)).size).toBe(1_200);
      expect(created.find((r) => r.name === "item-6")?.metadata).toEqual([{ k: "i", v: "6" }]);
      await relayAll(db);
      const counts = await eventCounts(db, tenant);
      expect(created.every((r) => counts.get(`${r._id} resource.created`) === 1)).toBe(true);
      const jobEvents = await db.collection(EVENTS_COLLECTION).find({ "object.id": id }).toArray();
      expect(jobEvents.map((e) => [e.type, e.sequence, e.object.status, e.object.result.created])).toEqual([
        ["job.succeeded", job.version, "succeeded", 1_200],
      ]);
      // Retention: the finishing write set when the job may go (30 days after it finished), its errors carry
      // that expiry already, and the relay's pull of its event made it the job's own.
      const retainUntil = jobRetainUntil(job.finished_at!);
      expect(job.retain_until).toEqual(retainUntil);
      expect((await db.collection<JobErrorDocument>("job_errors").find({ job: id }).toArray()).map((e) => e.expires_at)).toEqual([
        retainUntil,
        retainUntil,
        retainUntil,
      ]);
      expect((await jobOf(db, id))?.expires_at).toEqual(retainUntil);
    },
  );

  it("a chunk redone after a takeover (same checkpoint) inserts nothing twice: the ids derive from the job and the index", async () => {
    const tenant = newTenant();
    const items = Array.from({ length: 40 }, (_, i) => ({ name: `redo-${i}` }));
    await queueJob(db, tenant, { type: "resources.import", params: { items } });
    const { run, state } = await claimedRun();
    const executor = importExecutor(25);
    // The scan first: the whole file read, nothing created, the row count known.
    const scanned = (await executor.step(run, state))!;
    expect(scanned).toMatchObject({ next: 0, done: 0, import: { phase: "rows", total: 40 } });
    expect(await resources().countDocuments({ account: tenant.account })).toBe(0);
    const first = await executor.step(run, scanned);
    const again = await executor.step(run, scanned); // the worker died before its checkpoint; the next one redoes the chunk
    expect(again).toMatchObject({ next: 25, done: 25 });
    expect(first).toMatchObject({ next: 25, done: 25 });
    const last = await executor.step(run, again!);
    expect(last).toMatchObject({ next: 40, done: 40 });
    expect(await executor.step(run, last!)).toBeNull();
    expect(await resources().countDocuments({ account: tenant.account })).toBe(40);
    await relayAll(db);
    const counts = await eventCounts(db, tenant);
    expect([...counts.values()]).toEqual(Array(40).fill(1));
  });
});

describe("a chunk's changes and events in one transaction", () => {
  it("leaves no outbox: each created resource's event is in events at the chunk's commit, with no relay", async () => {
    const tenant = newTenant();
    await queueJob(db, tenant, { type: "resources.import", params: { items: Array.from({ length: 30 }, (_, i) => ({ name: `together-${i}` })) } });
    const { run, state } = await claimedRun();
    const executor = importExecutor(30);
    const scanned = (await executor.step(run, state))!;
    expect(await executor.step(run, scanned)).toMatchObject({ next: 30, done: 30 });
    const created = await resources().find({ account: tenant.account }).toArray();
    expect(created).toHaveLength(30);
    expect(created.filter((r) => (r.pending_events ?? []).length > 0)).toEqual([]);
    const counts = await eventCounts(db, tenant);
    expect(created.every((r) => counts.get(`${r._id} resource.created`) === 1)).toBe(true);
  });

  it("gives the chunks' events their tenant's next stream positions beside the relay's copies: every event of the tenant has one, none twice, none " +
    "skipped", async () => {
    const tenant = newTenant();
    await seedResources(db, tenant, 50); // their events wait in the outbox, for the relay
    const imported = await queueJob(db, tenant, {
      type: "resources.import",
      params: { items: Array.from({ length: 1_500 }, (_, i) => ({ name: `positioned-${i}` })) },
    });
    const updated = await queueJob(db, tenant, { type: "resources.bulk_update", params: { filter: { status: "active" }, update: { status: "paused" } } });
    const w = await jobsWorker(databaseName);
    await relayAll(db);
    const [importJob, updateJob] = [await finishedJob(db, imported), await finishedJob(db, updated)];
    await w.stop();
    await relayAll(db);
    expect([importJob.status, updateJob.status]).toEqual(["succeeded", "succeeded"]);
    const events = await db
      .collection<{ type: string; pos?: number }>(EVENTS_COLLECTION)
      .find({ account: tenant.account, livemode: tenant.livemode }, { projection: { type: 1, pos: 1 } })
      .toArray();
    expect(events.filter((e) => e.type === "resource.created")).toHaveLength(1_550);
    expect(events.filter((e) => e.type === "resource.updated")).toHaveLength(updateJob.result!.updated!);
    const positions = events.map((e) => e.pos).sort((a, b) => (a ?? 0) - (b ?? 0));
    expect(positions).toEqual(positions.map((_, i) => i + 1));
  }, 120_000);

  it("a worker killed inside a chunk's transaction: the run that takes the job over ends that transaction at once, not after the server's 60 s, and " +
    "updates each item once", async () => {
    const tenant = newTenant();
    const ids = await seedResources(db, tenant, 20);
    const id = await queueJob(db, tenant, { type: "resources.bulk_update", params: { filter: { status: "active" }, update: { status: "paused" } } });
    const dead = await claimedRun("dead-worker");
    const executor = bulkExecutor("update");
    // The filter pass: one page, which completes it.
    const matched = (await executor.step(dead.run, dead.state))!;
    expect(matched.snapshot).toMatchObject({ complete: true, total: 20 });
    // The dead worker's chunk in the air: its session recorded, its transaction open with a change of the chunk's
    // first resource, never committed (its process gone, nothing ends it but the server's reaping or a kill).
    let held: ClientSession | null = null;
    await dead.run
      .inTransaction(async (session) => {
        held = session;
        throw new Abandoned();
      })
      .catch((error: unknown) => {
        if (!(error instanceof Abandoned)) throw error;
      });
    held!.startTransaction();
    await resources().updateOne({ _id: ids[0]! }, { $set: { name: "never committed" } }, { session: held! });

    // The lease runs out; another worker takes the job over and redoes the chunk.
    const jobs = db.collection<RunnerJob>("jobs");
    await jobs.updateOne({ _id: id }, { $set: { lease_until: Date.now() - 1 } });
    const takeover = await claimJob(jobs, new LeaseQueue(jobs, { owner: "next-worker", leaseMs: 60_000 }), "next-worker", 60_000, 100);
    expect(takeover).toMatchObject({ takeover: true });
    const run = handRun(db, takeover!.job, "next-worker");
    const started = performance.now();
    expect(await executor.step(run, matched)).toMatchObject({ next: 20, done: 20 });
    const ms = performance.now() - started;
    console.log(`the chunk redone beside the dead worker's open transaction took ${Math.round(ms)} ms (the server would have held it up to 60,000)`);
    expect(ms).toBeLessThan(30_000);
    // The dead worker's transaction is gone: its commit finds nothing to commit.
    await expect(held!.commitTransaction()).rejects.toThrow();
    const all = await resources().find({ account: tenant.account }).toArray();
    expect(all.map((r) => [r.status, r.version, r.name === "never committed"])).toEqual(Array(20).fill(["paused", 1, false]));
    const counts = await eventCounts(db, tenant);
    expect(all.every((r) => counts.get(`${r._id} resource.updated`) === 1)).toBe(true);
  }, 120_000);
});

describe("resources.bulk_update", () => {
  it("updates exactly the resources matching the filter (status, metadata, created, ids) with resource.updated carrying only the changed fields", async () => {
    const tenant = newTenant();
    const ids = await seedResources(db, tenant, 30, (i) => ({
      status: i % 2 ? "paused" : "active",
      metadata: [
        { k: "tier", v: i % 3 === 0 ? "gold" : "silver" },
        { k: "a.b", v: "x" },
      ],
    }));
    const match = ids.filter((_, i) => i % 2 === 0 && i % 3 === 0);
    const id = await queueJob(db, tenant, {
      type: "resources.bulk_update",
      params: { filter: { status: "active", metadata: [{ k: "tier", v: "gold" }] }, update: { status: "archived", metadata: [{ k: "done", v: "yes" }] } },
    });
    const byIds = await queueJob(db, tenant, {
      type: "resources.bulk_update",
      params: { filter: { ids: [ids[1]!, ids[3]!], created: { gte: 0 } }, update: { metadata: "" } },
    });
    const w = await jobsWorker(databaseName);
    const job = await finishedJob(db, id);
    const second = await finishedJob(db, byIds);
    await w.stop();
    expect(job.status).toBe("succeeded");
    expect(job.progress).toEqual({ total: match.length, processed: match.length, failed: 0, skipped: 0 });
    expect(job.result).toEqual({ updated: match.length, errors: [], results_file: expect.stringMatching(/^file_/) });
    expect(second.result).toEqual({ updated: 2, errors: [], results_file: expect.stringMatching(/^file_/) });
    const after = await resources().find({ account: tenant.account }).toArray();
    for (const r of after) {
      const matched = match.includes(r._id);
      expect(r.status).toBe(matched ? "archived" : r._id === ids[1] || r._id === ids[3] ? "paused" : ids.indexOf(r._id) % 2 ? "paused" : "active");
      expect(r.version).toBe(matched || r._id === ids[1] || r._id === ids[3] ? 1 : 0);
    }
    expect(after.find((r) => r._id === ids[1])?.metadata).toEqual([]);
    await relayAll(db);
    const updated = await db.collection(EVENTS_COLLECTION).find({ account: tenant.account, type: "resource.updated", "object.id": match[0] }).toArray();
    expect(updated).toHaveLength(1);
    expect(updated[0]!.sequence).toBe(1);
    expect(updated[0]!.previous_attributes).toEqual({
      status: "active",
      metadata: [
        { k: "tier", v: "gold" },
        { k: "a.b", v: "x" },
      ],
    });
  });

  it(
    "a chunk redone after a takeover applies nothing twice (the job's mark), an item deleted after the filter was evaluated is skipped, and resources " +
      "made after the start are not items",
    async () => {
      const tenant = newTenant();
      const ids = await seedResources(db, tenant, 12);
      await queueJob(db, tenant, { type: "resources.bulk_update", params: { filter: { status: "active" }, update: { metadata: [{ k: "n", v: "1" }] } } });
      const { run, state } = await claimedRun();
      const executor = bulkExecutor("update", 5);
      const snapshotted = (await executor.step(run, state))!;
      expect(snapshotted.snapshot).toMatchObject({ complete: true, total: 12, pages: 1 });
      await seedResources(db, tenant, 3); // made after the start: outside the job's items
      await jobStore(db).get(tenant, run.job._id); // (the job is untouched by reads)
      await resources().updateOne({ _id: ids[7]! }, { $set: { deleted: true } });
      const first = (await executor.step(run, snapshotted))!;
      const redo = (await executor.step(run, snapshotted))!;
      expect(redo).toEqual(first);
      const second = (await executor.step(run, first))!;
      const third = (await executor.step(run, second))!;
      expect(third).toMatchObject({ next: 12, done: 11, skipped: 1, failed: 0 });
      expect(await executor.step(run, third)).toBeNull();
      const all = await resources().find({ account: tenant.account }).toArray();
      expect(
        all
          .filter((r) => r.version === 1)
          .map((r) => r._id)
          .sort(),
      ).toEqual(ids.filter((id) => id !== ids[7]).sort());
      expect(all.filter((r) => !ids.includes(r._id)).every((r) => r.version === 0)).toBe(true);
      await relayAll(db);
      const counts = await eventCounts(db, tenant);
      expect(ids.filter((id) => id !== ids[7]).every((id) => counts.get(`${id} resource.updated`) === 1)).toBe(true);
    },
  );

  it(
    "the filter is evaluated one page of 1,000 ids per step (each a checkpoint); a page written by an attempt before a takeover is kept and the pass " +
      "goes on after it",
    async () => {
      const tenant = newTenant();
      const ids = (await seedResources(db, tenant, 2_500)).sort();
      await queueJob(db, tenant, { type: "resources.bulk_delete", params: { filter: { created: { gte: 0 } } } });
      const { run, state } = await claimedRun();
      // The attempt before saw other matches for page 0 (here: without the first resource).
      await db.collection<JobItemsPage>(JOB_ITEMS_COLLECTION).insertOne({ _id: pageId(run.job._id, 0), job: run.job._id, page: 0, ids: ids.slice(1, 1_001) });
      const executor = bulkExecutor("delete");
      const first = (await executor.step(run, state))!;
      expect(first.snapshot).toMatchObject({ complete: false, pages: 1, total: 1_000, last: ids[1_000] });
      // A step redone (its checkpoint was lost) finds the page it wrote: the same checkpoint.
      const second = (await executor.step(run, first))!;
      expect(await executor.step(run, first)).toEqual(second);
      expect(second.snapshot).toMatchObject({ complete: false, pages: 2, total: 2_000, last: ids[2_000] });
      const third = (await executor.step(run, second))!;
      expect(third.snapshot).toMatchObject({ complete: true, pages: 3, total: 2_499, last: ids[2_499] });
      expect(third.next).toBe(0);
      // The pages are found by their `_id` range, `<job>:` (the index `_id_`): no other index is needed.
      const pages = await db
        .collection<JobItemsPage>(JOB_ITEMS_COLLECTION)
        .find({ _id: jobDocumentIds(run.job._id) })
        .toArray();
      expect(pages.sort((a, b) => a.page - b.page).flatMap((p) => p.ids)).toEqual(ids.slice(1));
    },
  );

  it("a match count that is a multiple of the page ends the pass with a step that finds nothing more", async () => {
    const tenant = newTenant();
    await seedResources(db, tenant, 1_000);
    await queueJob(db, tenant, { type: "resources.bulk_delete", params: { filter: { created: { gte: 0 } } } });
    const { run, state } = await claimedRun();
    const executor = bulkExecutor("delete");
    const full = (await executor.step(run, state))!;
    expect(full.snapshot).toMatchObject({ complete: false, pages: 1, total: 1_000 });
    expect((await executor.step(run, full))!.snapshot).toMatchObject({ complete: true, pages: 1, total: 1_000 });
  });

  it("a poison item (its merged metadata would pass 50 keys) fails alone; the rest are updated", async () => {
    const tenant = newTenant();
    const full = Array.from({ length: 50 }, (_, i) => ({ k: `k${i}`, v: "v" }));
    const ids = await seedResources(db, tenant, 6, (i) => (i === 2 ? { metadata: full } : {}));
    const id = await queueJob(db, tenant, { type: "resources.bulk_update", params: { filter: { ids }, update: { metadata: [{ k: "extra", v: "1" }] } } });
    const w = await jobsWorker(databaseName);
    const job = await finishedJob(db, id);
    await w.stop();
    expect(job.status).toBe("succeeded");
    expect(job.progress).toEqual({ total: 6, processed: 6, failed: 1, skipped: 0 });
    expect(job.result?.updated).toBe(5);
    expect(job.result?.errors).toEqual([{ index: 2, id: ids[2], code: "metadata_invalid", param: "metadata", message: expect.any(String) }]);
    expect((await db.collection("job_errors").findOne({ _id: `${id}:2` as never }))?.code).toBe("metadata_invalid");
    expect((await resources().findOne({ _id: ids[2]! }))?.version).toBe(0);
  });
});

describe("resources.bulk_delete", () => {
  it("tombstones each match with its resource.deleted event; a chunk redone counts its deletes once; one deleted by someone else is skipped", async () => {
    const tenant = newTenant();
    const ids = await seedResources(db, tenant, 8);
    await queueJob(db, tenant, { type: "resources.bulk_delete", params: { filter: { ids } } });
    const { run, state } = await claimedRun();
    const executor = bulkExecutor("delete", 4);
    const snapshotted = (await executor.step(run, state))!;
    await resources().updateOne({ _id: ids[6]! }, { $set: { deleted: true } });
    const first = (await executor.step(run, snapshotted))!;
    expect(await executor.step(run, snapshotted)).toEqual(first);
    const second = (await executor.step(run, first))!;
    expect(second).toMatchObject({ next: 8, done: 7, skipped: 1 });
    const all = await resources().find({ account: tenant.account }).toArray();
    expect(all.every((r) => r.deleted === true)).toBe(true);
    await relayAll(db);
    const counts = await eventCounts(db, tenant);
    expect(ids.filter((id) => id !== ids[6]).every((id) => counts.get(`${id} resource.deleted`) === 1)).toBe(true);
    expect(counts.get(`${ids[6]} resource.deleted`)).toBeUndefined();
  });

  it("runs end to end: succeeded with deleted = matches", async () => {
    const tenant = newTenant();
    await seedResources(db, tenant, 20, (i) => ({ status: i < 5 ? "archived" : "active" }));
    const id = await queueJob(db, tenant, { type: "resources.bulk_delete", params: { filter: { status: "archived" } } });
    const w = await jobsWorker(databaseName);
    const job = await finishedJob(db, id);
    await w.stop();
    expect(job.result).toEqual({ deleted: 5, errors: [], results_file: expect.stringMatching(/^file_/) });
    expect(await resources().countDocuments({ account: tenant.account, deleted: { $exists: false } })).toBe(15);
    // Each tombstone says when it may go (its idempotency window's close); the job's items pages are gone.
    for (const tombstone of await resources().find({ account: tenant.account, deleted: true }).toArray()) {
      expect(tombstone.retain_until).toEqual(new Date(idTimeMs(tombstone._id) + IDEMPOTENCY_RETENTION_MS));
    }
    expect(await db.collection<JobItemsPage>(JOB_ITEMS_COLLECTION).countDocuments({ _id: jobDocumentIds(id) })).toBe(0);
  });
});

describe("running", () => {
  it("an idle worker claims a newly queued job on the queue counter, without waiting for its next full look", async () => {
    const tenant = newTenant();
    const items = [{ name: "one" }];
    const first = await queueJob(db, tenant, { type: "resources.import", params: { items } });
    // Looks a minute apart: after the first job every lane waits that long, unless the counter moves.
    const w = await jobsWorker(databaseName, { pollMs: 60_000 });
    expect((await finishedJob(db, first, 20_000)).status).toBe("succeeded");
    const second = await queueJob(db, tenant, { type: "resources.import", params: { items } });
    const job = await finishedJob(db, second, 20_000);
    await w.stop();
    expect(job.status).toBe("succeeded");
  });

  it("cancel while running: canceled at the next checkpoint, the work committed before stays, job.canceled recorded", async () => {
    const tenant = newTenant();
    const items = Array.from({ length: 3_000 }, (_, i) => ({ name: `c${i}` }));
    const id = await queueJob(db, tenant, { type: "resources.import", params: { items } });
    const w = await jobsWorker(databaseName, { executors: { "resources.import": importExecutor(20) } });
    await eventually(async () => expect((await jobOf(db, id))?.progress.processed).toBeGreaterThan(0), { timeoutMs: 30_000 });
    await jobStore(db).cancel(tenant, id, { requestId: null, idempotencyKey: null });
    const job = await finishedJob(db, id);
    await w.stop();
    expect(job.status).toBe("canceled");
    expect(job.cancel_requested_at).not.toBeNull();
    expect(job.progress.processed).toBeLessThan(3_000);
    expect(job.result?.created).toBe(job.progress.processed);
    expect(await resources().countDocuments({ account: tenant.account })).toBe(job.progress.processed);
    await relayAll(db);
    expect((await db.collection(EVENTS_COLLECTION).findOne({ "object.id": id }))?.type).toBe("job.canceled");
  });

  it("JOBS_PER_ACCOUNT: a tenant's third job waits while two hold the slots; another tenant's job is claimed past it", async () => {
    const a = newTenant();
    const b = newTenant();
    const jobs = db.collection<RunnerJob>("jobs");
    const one: RequestedParams = { type: "resources.import", params: { items: [{ name: "x" }] } };
    const [a1, a2, a3] = [await queueJob(db, a, one), await queueJob(db, a, one), await queueJob(db, a, one)];
    const b1 = await queueJob(db, b, one);
    const claim = (owner: string) => claimJob(jobs, new LeaseQueue(jobs, { owner, leaseMs: 60_000 }), owner, 60_000, 2);
    const claimed = [await claim("w1"), await claim("w2"), await claim("w3"), await claim("w4")];
    const ours = claimed.map((c) => c?.job._id).filter((id) => [a1, a2, a3, b1].includes(id!));
    expect(ours).toHaveLength(3);
    expect(ours).toContain(b1);
    const waiting = [a1, a2, a3].filter((id) => !ours.includes(id))!;
    expect(waiting).toHaveLength(1);
    expect((await jobOf(db, waiting[0]!))?.status).toBe("queued");
    const running = await jobs.find({ _id: { $in: [a1, a2, a3] }, status: "running" }).toArray();
    expect(running.map((j) => j.run_slot).sort()).toEqual([`${a.account}/test/0`, `${a.account}/test/1`]);
    // The slots are a unique index: the waiting job cannot take one even by a direct write.
    await expect(jobs.updateOne({ _id: waiting[0]! }, { $set: { run_slot: running[0]!.run_slot! } })).rejects.toMatchObject({ code: 11000 });
  });

  it("two workers racing over the same jobs: each job runs to success once, each resource is created and updated once", async () => {
    const tenants = [newTenant(), newTenant(), newTenant()];
    const seeded = await Promise.all(tenants.map((t) => seedResources(db, t, 300)));
    const ids = [];
    for (const t of tenants) {
      ids.push(await queueJob(db, t, { type: "resources.import", params: { items: Array.from({ length: 700 }, (_, i) => ({ name: `race${i}` })) } }));
      ids.push(await queueJob(db, t, { type: "resources.bulk_update", params: { filter: { status: "active" }, update: { status: "paused" } } }));
    }
    const small = { "resources.import": importExecutor(50), "resources.bulk_update": bulkExecutor("update", 50) };
    const workers = [await jobsWorker(databaseName, { executors: small }), await jobsWorker(databaseName, { executors: small })];
    const jobs = await Promise.all(ids.map((id) => finishedJob(db, id)));
    await Promise.all(workers.map((w) => w.stop()));
    expect(jobs.map((j) => j.status)).toEqual(Array(6).fill("succeeded"));
    expect(jobs.map((j) => j.attempts)).toEqual(Array(6).fill(0));
    for (const [i, t] of tenants.entries()) {
      expect(await resources().countDocuments({ account: t.account, name: /^race/ })).toBe(700);
      const seededDocs = await resources()
        .find({ _id: { $in: seeded[i]! } })
        .toArray();
      expect(seededDocs.every((r) => r.version === 1 && r.status === "paused")).toBe(true);
    }
    await relayAll(db);
    for (const t of tenants) {
      const counts = await eventCounts(db, t);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    }
  });
});
