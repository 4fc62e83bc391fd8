import { isDuplicateKeyError } from "@rms/proto";
import type { Collection, Filter } from "mongodb";
import { idBoundAt } from "../../resources/batch.js";
import type { LeaseQueue } from "../../storage/lease.js";
import type { Checkpoint, RunnerJob } from "./seam.js";

/** Queued jobs looked at per claim before giving up until the next poll (accounts at their limit are skipped in the query). */
const MAX_CANDIDATES = 20;

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
}

/** The checkpoint a job starts from. */
export function firstCheckpoint(job: RunnerJob, nowMs: number): Checkpoint {
  const base: Checkpoint = { next: 0, chunk_ms: nowMs, done: 0, failed: 0, skipped: 0, errors: [] };
  return job.type === "resources.import" ? base : { ...base, snapshot: { bound: idBoundAt(nowMs), pages: 0, last: null, complete: false, total: 0 } };
}

export type Claimed = { job: RunnerJob; takeover: boolean };

/**
 * Claims one job: first a running one whose worker let go (released at SIGTERM, or its lease expired:
 * the worker died, which counts as an attempt), so it continues from its checkpoint; else the oldest
 * queued job of a tenant with a free slot. A queued job becomes running, takes a slot, its lease and
 * its first checkpoint in one write, filtered on `status: "queued"`, so a cancel of the queued job
 * and a claim by another worker each either win or see nothing.
 */
export async function claimJob(jobs: Collection<RunnerJob>, leases: LeaseQueue<RunnerJob>, owner: string, leaseMs: number, perAccount: number): Promise<Claimed | null> {
  const released = await leases.claim({ status: "running", lease_owner: null } as Filter<RunnerJob>, { _id: 1 });
  if (released) return { job: released, takeover: true };
  const expired = await leases.claim({ status: "running", lease_owner: { $ne: null } } as Filter<RunnerJob>, { _id: 1 });
  if (expired) {
    // Its worker died holding it: an attempt, and one more without progress.
    await leases.update(expired._id, expired.epoch, { $inc: { attempts: 1, stalled: 1, version: 1 } });
    return { job: { ...expired, attempts: expired.attempts + 1, stalled: (expired.stalled ?? 0) + 1, version: expired.version + 1 }, takeover: true };
  }
  const full: { account: string; livemode: boolean }[] = [];
  for (let looked = 0; looked < MAX_CANDIDATES; looked++) {
    const candidate = await jobs.findOne({ status: "queued", ...(full.length ? { $nor: full } : {}) } as Filter<RunnerJob>, {
      sort: { _id: 1 },
      projection: { _id: 1, account: 1, livemode: 1, type: 1 },
    });
    if (!candidate) return null;
    const job = await takeSlot(jobs, candidate, owner, leaseMs, perAccount);
    if (job === "full") full.push({ account: candidate.account, livemode: candidate.livemode });
    else if (job) return { job, takeover: false };
    // null: canceled or claimed by another worker meanwhile; look again.
  }
  return null;
}

async function takeSlot(
  jobs: Collection<RunnerJob>,
  candidate: Pick<RunnerJob, "_id" | "account" | "livemode" | "type">,
  owner: string,
  leaseMs: number,
  perAccount: number,
): Promise<RunnerJob | null | "full"> {
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
