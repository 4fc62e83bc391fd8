import { RESOURCES_VOCABULARY } from "@rms/proto";
import { eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import type { Db } from "mongodb";
import { pino } from "pino";
import { expect, inject } from "vitest";
import type { Tenant } from "../caller.js";
import { JobStore } from "../jobs/store.js";
import type { RequestedParams } from "../jobs/model.js";
import { JobFiles } from "../files/for-jobs.js";
import { DEFAULT_JOBS_QUEUED_PER_ACCOUNT } from "../settings.js";
import type { RunOptions } from "../jobs/runner/run.js";
import type { JobRun, RunnerJob } from "../jobs/runner/seam.js";
import { RunTransactions } from "../jobs/runner/transactions.js";
import { eventPublisher } from "../event-relay.js";
import { DEFAULT_RETRY } from "../jobs/runner/transient.js";
import { importedResource, importedResourceId } from "../resources/batch.js";
import type { ResourceDocument, ResourceStatusName } from "../resources/model.js";
import { RESOURCES_COLLECTION } from "../resources/store.js";
import { EVENTS_COLLECTION, OutboxRelay } from "../storage/relay.js";
import { startWorker, type RunningWorker } from "../worker/run.js";
import { jobsTask, type JobsTaskOptions } from "../worker/tasks/jobs.js";

const NO_REQUEST = { requestId: null, idempotencyKey: null };

/** File storage as jobs use it (the files domain's surface for jobs), on the test's database. */
export function jobFiles(db: Db): JobFiles {
  return new JobFiles(db);
}

/** A job store as the jobs domain opens it, with file storage (imports store their items as a file). */
export function jobStore(db: Db): JobStore {
  return new JobStore(db, () => {}, DEFAULT_JOBS_QUEUED_PER_ACCOUNT, jobFiles(db));
}

/** Queues a job as the jobs API does (its store's create; an inline import's items become a file). */
export async function queueJob(db: Db, tenant: Tenant, typed: RequestedParams): Promise<string> {
  const created = await jobStore(db).create(tenant, typed, NO_REQUEST);
  if (!("doc" in created)) throw new Error("job not created");
  return created.doc._id;
}

export function jobOf(db: Db, id: string): Promise<RunnerJob | null> {
  return db.collection<RunnerJob>("jobs").findOne({ _id: id });
}

/** The job once it is finished (succeeded, failed or canceled), as its document stands; waits up to `timeoutMs`. */
export function finishedJob(db: Db, id: string, timeoutMs = 60_000): Promise<RunnerJob> {
  return eventually(
    async () => {
      const job = await jobOf(db, id);
      expect(["succeeded", "failed", "canceled"]).toContain(job?.status);
      return job!;
    },
    { timeoutMs, intervalMs: 50 },
  );
}

/**
 * What `runJob` needs to run a claimed job in a test, as a worker gives it: file storage on `db`, a silent logger, a
 * 60 s lease, writes told to no one, never stopping, no wait between retries, the default retry policy; `options`
 * names the database, the owner and its leases, and anything else to differ.
 */
export function jobRunOptions(options: Pick<RunOptions, "db" | "owner" | "leases"> & Partial<RunOptions>): RunOptions {
  return {
    files: jobFiles(options.db),
    logger: pino({ level: "silent" }),
    leaseMs: 60_000,
    written: () => {},
    publish: eventPublisher(options.db),
    stopping: () => false,
    sleep: async () => {},
    retry: DEFAULT_RETRY,
    ...options,
  };
}

/**
 * A claimed job's run as an executor sees it, made by hand (an executor's steps driven by the test): file storage on
 * `db`, the run's transactions under `owner`'s lease, its events published as a worker publishes them, and the
 * written documents' ids collected into `written`.
 */
export function handRun(db: Db, job: RunnerJob, owner: string, written: string[] = []): JobRun {
  const transactions = new RunTransactions(db, job, owner, pino({ level: "silent" }));
  return {
    db,
    files: jobFiles(db),
    job,
    written: (_collection, ids) => written.push(...ids),
    inTransaction: (work) => transactions.run(work),
    publish: eventPublisher(db),
  };
}

/** An in-process worker running only the jobs task on the test's database: a poll every 20 ms, a 2 s lease. */
export function jobsWorker(databaseName: string, options: JobsTaskOptions = {}, jobsPerAccount = 2): Promise<RunningWorker> {
  return startWorker({
    mongoUri: inject("mongoUri"),
    databaseName,
    tasks: [jobsTask({ pollMs: 20, leaseMs: 2_000, ...options })],
    settings: { jobsPerAccount },
  });
}

/** `count` resources of the tenant inserted at once, as creates would store them (with their created events). */
export async function seedResources(
  db: Db,
  tenant: Tenant,
  count: number,
  fields: (i: number) => { name?: string; status?: ResourceStatusName; metadata?: { k: string; v: string }[] } = () => ({}),
): Promise<string[]> {
  const seed = `seed${Math.random()}`;
  const now = Date.now() - 1_000;
  const docs: ResourceDocument[] = Array.from({ length: count }, (_, i) =>
    importedResource(tenant, importedResourceId(seed, i, now), { name: `r${i}`, status: "active", metadata: [], ...fields(i) }, now, NO_REQUEST),
  );
  for (let i = 0; i < docs.length; i += 1000) await db.collection<ResourceDocument>(RESOURCES_COLLECTION).insertMany(docs.slice(i, i + 1000));
  return docs.map((d) => d._id);
}

/** Moves every pending event of resources and jobs into `events` (sweeps until nothing is left). */
export async function relayAll(db: Db): Promise<void> {
  const relay = new OutboxRelay(db, { sources: [RESOURCES_COLLECTION, "jobs"], logger: pino({ level: "silent" }) });
  while ((await relay.sweep()).events > 0);
}

/** Events of the tenant about resources, counted per object id and type. */
export async function eventCounts(db: Db, tenant: Tenant): Promise<Map<string, number>> {
  const events = await db
    .collection<{ _id: string; type: string; object: { id: string } }>(EVENTS_COLLECTION)
    .find({ account: tenant.account, livemode: tenant.livemode, type: { $in: [...RESOURCES_VOCABULARY.eventTypes] } })
    .toArray();
  const counts = new Map<string, number>();
  for (const e of events) counts.set(`${e.object.id} ${e.type}`, (counts.get(`${e.object.id} ${e.type}`) ?? 0) + 1);
  return counts;
}

/** An uploaded `resources_import` file of the tenant (as `POST /v1/files` leaves one): its id. */
export async function importFile(db: Db, tenant: Tenant, text: string | Buffer, type: "jsonl" | "csv"): Promise<string> {
  return (await jobFiles(db).createImportFile(tenant, typeof text === "string" ? Buffer.from(text) : text, type)).id;
}

/** A finished file's bytes, as a download streams them, and its document's size and sha256. */
export async function fileBytes(db: Db, tenant: Tenant, id: string): Promise<{ bytes: Buffer; size: number; sha256: string; purpose: string }> {
  const files = jobFiles(db);
  const doc = await files.store.get(tenant, id);
  const parts: Buffer[] = [];
  for await (const piece of files.store.read(doc)) parts.push(Buffer.from(piece));
  return { bytes: Buffer.concat(parts), size: doc.size, sha256: doc.sha256, purpose: doc.purpose };
}

/** A JSONL file's lines as objects. */
export function jsonLines(bytes: Buffer): Record<string, unknown>[] {
  return bytes
    .toString("utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
