// The jobs phase of `npm run chaos`: a 10,000-item import and then a bulk update of what it created, run by
// the stack's worker processes while they are SIGKILLed at random (their supervisors in chaos.ts restart
// them); then the database is counted: resources expected and found, updates applied twice or not at all,
// missing and duplicate events. Called from chaos.ts.
import type { Db } from "mongodb";
import type { Child } from "./stack/children.js";
import { httpsCall, newTestKey } from "./stack/processes.js";

export interface JobsChaosOptions {
  db: Db;
  databaseName: string;
  /** Core's address (a fresh account and key for the phase), the gateway's data directory (its development certificate) and port. */
  coreAddr: string;
  dataDir: string;
  gatewayPort: number;
  /** The running worker processes (with a short JOBS_LEASE_MS), as their supervisors keep them. */
  workers: () => readonly (Child | undefined)[];
  log: (line: string) => void;
  items?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const JOB_DEADLINE_MS = 8 * 60_000;
const SETTLE_MS = 180_000;

export async function runJobsChaos(options: JobsChaosOptions): Promise<{ report: Record<string, unknown>; ok: boolean }> {
  const started = Date.now();
  const items = options.items ?? Number(process.env.CHAOS_JOB_ITEMS ?? 10_000);
  const { db, log } = options;
  const tag = `jobs-${Date.now()}`;
  const { accountId, secret } = await newTestKey(options.coreAddr);
  let killing = true;
  let kills = 0;

  /** Half the kills hit the worker holding a job (its lease owner name carries its pid), the others a random one. */
  const victim = async (): Promise<Child | undefined> => {
    const workers = options.workers();
    if (Math.random() < 0.5) {
      const running = await db
        .collection("jobs")
        .find({ status: "running", lease_owner: { $ne: null } }, { projection: { lease_owner: 1 } })
        .toArray()
        .catch(() => []);
      const pids = new Set(running.map((j) => Number(String(j.lease_owner).split(":")[1])));
      const holder = workers.find((w) => w?.process.pid !== undefined && pids.has(w.process.pid));
      if (holder) return holder;
    }
    return workers[Math.floor(Math.random() * workers.length)];
  };
  const killer = async () => {
    while (killing) {
      await sleep(3_000 + Math.random() * 4_000);
      const child = await victim();
      if (!killing || !child || child.process.exitCode !== null || child.process.signalCode !== null) continue;
      child.process.kill("SIGKILL");
      kills++;
    }
  };
  const killing$ = killer();
  /** Each job loses its worker at least once: SIGKILL of its holder once it has committed some items. */
  const killHolderMidway = async (id: string) => {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const job = await db.collection("jobs").findOne({ _id: id as never }, { projection: { status: 1, lease_owner: 1, "progress.processed": 1 } });
      if (!job || (job.status !== "running" && job.status !== "queued")) return;
      if (job.status === "running" && job.progress.processed > 0 && job.lease_owner) {
        const pid = Number(String(job.lease_owner).split(":")[1]);
        const holder = options.workers().find((w) => w?.process.pid === pid);
        if (holder && holder.process.exitCode === null && holder.process.signalCode === null) {
          holder.process.kill("SIGKILL");
          kills++;
          return;
        }
      }
      await sleep(20);
    }
  };

  const post = async (body: unknown, key: string): Promise<string> => {
    for (;;) {
      const reply = await httpsCall(options.dataDir, options.gatewayPort, "POST", "/v1/jobs", {
        key: secret,
        form: JSON.stringify(body),
        headers: { "content-type": "application/json", "idempotency-key": key },
      }).catch(() => undefined);
      if (reply?.status === 201 || reply?.status === 200) return (JSON.parse(reply.body) as { id: string }).id;
      if (reply && reply.status >= 400 && reply.status < 500 && reply.status !== 409 && reply.status !== 429) throw new Error(`POST /v1/jobs: ${reply.status} ${reply.body}`);
      await sleep(300);
    }
  };
  const waitFor = async (id: string): Promise<{ status: string; attempts: number; result: unknown }> => {
    const deadline = Date.now() + JOB_DEADLINE_MS;
    for (;;) {
      const job = await db.collection("jobs").findOne({ _id: id as never });
      if (job && ["succeeded", "failed", "canceled"].includes(job.status)) return job as never;
      if (Date.now() > deadline) return { status: job?.status ?? "missing", attempts: job?.attempts ?? 0, result: null };
      await sleep(250);
    }
  };

  log(
    `jobs: import of ${items} items, then a bulk update of them, ${options.workers().length} workers SIGKILLed every 3 to 7 s (half of the kills aimed at the job's holder) and each job's holder once midway`,
  );
  const importId = await post(
    { type: "resources.import", params: { items: Array.from({ length: items }, (_, i) => ({ name: `${tag}-${i}`, metadata: { tag } })) } },
    `${tag}-import`,
  );
  await killHolderMidway(importId);
  const imported = await waitFor(importId);
  log(`jobs: import ${imported.status} after ${((Date.now() - started) / 1000).toFixed(1)} s, attempts ${imported.attempts}, ${kills} kills so far`);
  const updateId = await post(
    { type: "resources.bulk_update", params: { filter: { metadata: { tag } }, update: { status: "paused", metadata: { step: "updated" } } } },
    `${tag}-update`,
  );
  await killHolderMidway(updateId);
  const updated = await waitFor(updateId);
  log(`jobs: bulk update ${updated.status} after ${((Date.now() - started) / 1000).toFixed(1)} s, attempts ${updated.attempts}, ${kills} kills`);
  killing = false;
  await killing$;

  // Settle: the workers that are up (and core's sweep) move what is left in outboxes.
  const settleStarted = Date.now();
  const pendingNow = async () =>
    (await db.collection("resources").countDocuments({ account: accountId, "pending_events.0": { $exists: true } })) +
    (await db.collection("jobs").countDocuments({ _id: { $in: [importId, updateId] } as never, "pending_events.0": { $exists: true } }));
  let pending = await pendingNow();
  while (pending > 0 && Date.now() - settleStarted < SETTLE_MS) {
    await sleep(500);
    pending = await pendingNow();
  }
  log(`jobs: settled in ${((Date.now() - settleStarted) / 1000).toFixed(1)} s; documents with pending events: ${pending}`);

  const ours = (name: unknown) => typeof name === "string" && name.startsWith(`${tag}-`);
  const found = (
    await db
      .collection("resources")
      .find({ account: accountId }, { projection: { name: 1, version: 1, status: 1 } })
      .toArray()
  ).filter((r) => ours(r.name));
  const events = (
    await db
      .collection("events")
      .find({ account: accountId }, { projection: { type: 1, "object.id": 1, "object.name": 1, sequence: 1 } })
      .toArray()
  ).filter((e) => ours(e.object.name) || e.object.id === importId || e.object.id === updateId);
  const seen = new Map<string, number>();
  for (const e of events) seen.set(`${e.object.id}/${e.type}/${e.sequence}`, (seen.get(`${e.object.id}/${e.type}/${e.sequence}`) ?? 0) + 1);
  const names = new Map<string, number>();
  for (const r of found) names.set(r.name, (names.get(r.name) ?? 0) + 1);
  const duplicates = [...names.values()].reduce((sum, n) => sum + n - 1, 0);
  const doubleApplied = found.filter((r) => r.version > 1).length;
  const notApplied = found.filter((r) => r.version < 1 || r.status !== "paused").length;
  let missingEvents = 0;
  for (const r of found) {
    if (!seen.has(`${r._id}/resource.created/0`)) missingEvents++;
    for (let s = 1; s <= r.version; s++) if (!seen.has(`${r._id}/resource.updated/${s}`)) missingEvents++;
  }
  for (const id of [importId, updateId]) if (![...seen.keys()].some((k) => k.startsWith(`${id}/job.`))) missingEvents++;
  const duplicateEvents = [...seen.values()].reduce((sum, n) => sum + n - 1, 0);
  const report = {
    import_status: imported.status,
    import_attempts: imported.attempts,
    bulk_update_status: updated.status,
    bulk_update_attempts: updated.attempts,
    resources_expected: items,
    resources_found: found.length,
    duplicate_resources: duplicates,
    updates_applied_twice: doubleApplied,
    updates_missing: notApplied,
    events: events.length,
    missing_events: missingEvents,
    duplicate_events: duplicateEvents,
    documents_with_pending_events: pending,
    sigkill_worker: kills,
    seconds: Math.round((Date.now() - started) / 1000),
  };
  const ok =
    imported.status === "succeeded" &&
    updated.status === "succeeded" &&
    found.length === items &&
    duplicates === 0 &&
    doubleApplied === 0 &&
    notApplied === 0 &&
    missingEvents === 0 &&
    duplicateEvents === 0 &&
    pending === 0;
  return { report, ok };
}
