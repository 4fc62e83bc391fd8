import { isDuplicateKeyError } from "@rms/proto";
import type { Collection, Filter } from "mongodb";
import { idBoundAt } from "../../resources/batch.js";
import { ensureExpiryIndex } from "../../storage/expiry.js";
import type { LeaseQueue } from "../../storage/lease.js";
import { JOB_ITEMS_COLLECTION } from "./bulk.js";
import type { Checkpoint, RunnerJob } from "./seam.js";

/** The slot name of JOBS_PER_ACCOUNT slot `n` of a tenant. */
export function runSlot(account: string, livemode: boolean, n: number): string {
  return `${account}/${livemode ? "live" : "test"}/${n}`;
}

/**
 * The unique sparse index that makes JOBS_PER_ACCOUNT a fact of the database: a running job holds one
 * of its tenant's `run_slot` values `0..N-1`; a second job cannot take a held one (duplicate key),
 * and a job that is not running has no `run_slot` at all (sparse: not indexed).
 */
export async function ensureRunnerIndexes(jobs: Collection<RunnerJob>): Promise<void> {
  await jobs.createIndex({ run_slot: 1 }, { unique: true, sparse: true, name: "run_slot_unique" });
  // The claim's read (CLAIM_FILTER, CLAIM_SORT): the unfinished jobs of every tenant, oldest first. This
  // index answers it with two index ranges merged in `_id` order, no collection scan and no in-memory
  // sort; partial, it holds the unfinished jobs only, not the finished ones the 30 days keep.
  await jobs.createIndex(CLAIM_INDEX, { name: CLAIM_INDEX_NAME, partialFilterExpression: CLAIM_FILTER });
  // A finished job's items pages: deleted at its finish, else expired with the job (run.ts).
  await ensureExpiryIndex(jobs.db.collection(JOB_ITEMS_COLLECTION));
}

/** What a claim reads: every unfinished job (its small fields), oldest first. */
export const CLAIM_FILTER = { status: { $in: ["queued", "running"] } } as Filter<RunnerJob>;
export const CLAIM_SORT = { _id: 1 } as const;
export const CLAIM_INDEX = { status: 1, _id: 1 } as const;
export const CLAIM_INDEX_NAME = "unfinished_id";

/** The checkpoint a job starts from. */
export function firstCheckpoint(job: RunnerJob, nowMs: number): Checkpoint {
  const base: Checkpoint = { next: 0, chunk_ms: nowMs, done: 0, failed: 0, skipped: 0, errors: [] };
  return job.type === "resources.import" ? base : { ...base, snapshot: { bound: idBoundAt(nowMs), pages: 0, last: null, complete: false, total: 0 } };
}

export type Claimed = { job: RunnerJob; takeover: boolean };

/** Unfinished jobs one look reads (their small fields only), oldest first. */
const LOOK_LIMIT = 200;

type Glance = Pick<RunnerJob, "_id" | "account" | "livemode" | "type" | "status" | "lease_owner" | "lease_until">;

/**
 * Claims one job: first a running one whose worker let go (released at SIGTERM, or its lease expired:
 * the worker died, which counts as an attempt), so it continues from its checkpoint; else the oldest
 * queued job of a tenant with a free slot. One read finds the candidates (from the claim index: the
 * unfinished jobs only); writes come only when there is something to take. A queued job
 * becomes running, takes a slot, its lease and its first checkpoint in one write filtered on
 * `status: "queued"`, so a claim racing another worker or a cancel of the queued job either wins or
 * sees nothing.
 */
export async function claimJob(jobs: Collection<RunnerJob>, leases: LeaseQueue<RunnerJob>, owner: string, leaseMs: number, perAccount: number): Promise<Claimed | null> {
  const now = Date.now();
  const unfinished = (await jobs
    .find(CLAIM_FILTER, {
      projection: { _id: 1, account: 1, livemode: 1, type: 1, status: 1, lease_owner: 1, lease_until: 1 },
    })
    .sort(CLAIM_SORT)
    .limit(LOOK_LIMIT)
    .toArray()) as Glance[];
  const tenant = (j: Glance) => `${j.account}/${j.livemode}`;
  const running = unfinished.filter((j) => j.status === "running");
  for (const job of running.filter((j) => j.lease_owner === null || (j.lease_until ?? 0) <= now)) {
    const died = job.lease_owner !== null;
    const claimed = await leases.claim({ _id: job._id, status: "running", lease_owner: died ? { $ne: null } : null } as Filter<RunnerJob>);
    if (!claimed) continue;
    if (!died) return { job: claimed, takeover: true };
    // Its worker died holding it: an attempt, and one more without progress.
    await leases.update(claimed._id, claimed.epoch, { $inc: { attempts: 1, stalled: 1, version: 1 } });
    return { job: { ...claimed, attempts: claimed.attempts + 1, stalled: (claimed.stalled ?? 0) + 1, version: claimed.version + 1 }, takeover: true };
  }
  const busy = new Map<string, number>();
  for (const job of running) busy.set(tenant(job), (busy.get(tenant(job)) ?? 0) + 1);
  const full = new Set<string>();
  for (const candidate of unfinished.filter((j) => j.status === "queued")) {
    // A tenant seen holding every slot is skipped without a write; the slots themselves decide the rest.
    if (full.has(tenant(candidate)) || (busy.get(tenant(candidate)) ?? 0) >= perAccount) continue;
    const job = await takeSlot(jobs, candidate, owner, leaseMs, perAccount);
    if (job === "full") full.add(tenant(candidate));
    else if (job) return { job, takeover: false };
    // null: canceled or claimed by another worker meanwhile: the next one.
  }
  return null;
}

async function takeSlot(jobs: Collection<RunnerJob>, candidate: Glance, owner: string, leaseMs: number, perAccount: number): Promise<RunnerJob | null | "full"> {
  for (let n = 0; n < perAccount; n++) {
    const now = Date.now();
    try {
      return await jobs.findOneAndUpdate(
        { _id: candidate._id, status: "queued" } as Filter<RunnerJob>,
        {
          $set: {
            status: "running",
            run_slot: runSlot(candidate.account, candidate.livemode, n),
            started_at: Math.floor(now / 1000),
            lease_owner: owner,
            lease_until: now + leaseMs,
            checkpoint: firstCheckpoint(candidate as RunnerJob, now),
            stalled: 0,
          },
          $inc: { epoch: 1, version: 1 },
        },
        { returnDocument: "after" },
      );
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
  }
  return "full";
}
