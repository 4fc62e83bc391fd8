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
 * The claim's indexes: `run_slot_unique` makes JOBS_PER_ACCOUNT a fact of the database (a running job holds
 * one of its tenant's `run_slot` values `0..N-1`; a second job cannot take a held one, and a job that is not
 * running has none: sparse); CLAIM_INDEX serves every read of the claim.
 */
export async function ensureRunnerIndexes(jobs: Collection<RunnerJob>): Promise<void> {
  await jobs.createIndex({ run_slot: 1 }, { unique: true, sparse: true, name: "run_slot_unique" });
  // The running jobs, and each tenant's oldest queued job (its queue head) in tenant order. Partial: it
  // holds the unfinished jobs only, not the finished ones the 30 days keep.
  await jobs.createIndex(CLAIM_INDEX, { name: CLAIM_INDEX_NAME, partialFilterExpression: UNFINISHED });
  // A finished job's items pages: deleted at its finish, else expired (run.ts).
  await ensureExpiryIndex(jobs.db.collection(JOB_ITEMS_COLLECTION));
}

/** What the claim's index holds: the unfinished jobs. */
export const UNFINISHED = { status: { $in: ["queued", "running"] } } as Filter<RunnerJob>;
export const CLAIM_INDEX = { status: 1, account: 1, livemode: 1, _id: 1 } as const;
export const CLAIM_INDEX_NAME = "unfinished_tenant_id";
/** Queue heads in tenant order: with `status` fixed, the claim index's own order. */
const HEAD_ORDER = { account: 1, livemode: 1, _id: 1 } as const;
/** Queue heads a claim may walk past the tenants that have a job running (heads taken by another worker meanwhile). */
const WALK_SLACK = 8;

/** The checkpoint a job starts from. */
export function firstCheckpoint(job: RunnerJob, nowMs: number): Checkpoint {
  const base: Checkpoint = { next: 0, chunk_ms: nowMs, done: 0, failed: 0, skipped: 0, errors: [] };
  if (job.type === "resources.import") return base;
  if (job.type === "resources.export") return { ...base, export: { bound: idBoundAt(nowMs), last: null, complete: false } };
  return { ...base, snapshot: { bound: idBoundAt(nowMs), pages: 0, last: null, complete: false, total: 0 } };
}

export type Claimed = { job: RunnerJob; takeover: boolean };

/** A tenant: one account in one mode, the unit of fairness. */
export type TenantKey = Pick<RunnerJob, "account" | "livemode">;

type Glance = Pick<RunnerJob, "_id" | "account" | "livemode" | "type" | "status" | "lease_owner" | "lease_until">;
const GLANCE = { _id: 1, account: 1, livemode: 1, type: 1, status: 1, lease_owner: 1, lease_until: 1 } as const;

const tenantOf = (j: TenantKey) => `${j.account}/${j.livemode}`;

/**
 * Claims one job, fairly between tenants (CONTRACT.md section 6, "Fair sharing"):
 * 1. A running job whose worker let go (released at SIGTERM first, then an expired lease: the worker died,
 *    which counts as an attempt) continues from its checkpoint. One read of the running jobs (the claim
 *    index's `running` range: as many as run now, never the queued backlog) finds them, and which tenants
 *    have a job running.
 * 2. Else the queue heads, one tenant after another from the tenant after `after` (the rotation: the
 *    tenant this worker claimed for last), wrapping: each head is the tenant's oldest queued job, one
 *    index seek (one key, one document) whatever the tenant has queued. The first head of a tenant with
 *    no job running is claimed. At most one head per tenant with a job running is walked past (there are
 *    no more such tenants than running jobs), plus WALK_SLACK heads taken meanwhile by other workers.
 * 3. Else (every tenant with a queued job has one running) the walked heads of tenants with a free slot,
 *    the fewest running first.
 * A queued job becomes running, takes a slot, its lease and its first checkpoint in one write filtered on
 * `status: "queued"`, so a claim racing another worker or a cancel of the queued job either wins or sees
 * nothing.
 */
export async function claimJob(
  jobs: Collection<RunnerJob>,
  leases: LeaseQueue<RunnerJob>,
  owner: string,
  leaseMs: number,
  perAccount: number,
  after: TenantKey | null = null,
): Promise<Claimed | null> {
  const now = Date.now();
  const running = (await jobs.find({ status: "running" } as Filter<RunnerJob>, { projection: GLANCE, hint: CLAIM_INDEX_NAME }).toArray()) as Glance[];
  const letGo = running.filter((j) => j.lease_owner === null || (j.lease_until ?? 0) <= now);
  // Released ones first: their worker stopped cleanly and no lease has to run out.
  letGo.sort((a, b) => Number(a.lease_owner !== null) - Number(b.lease_owner !== null));
  for (const job of letGo) {
    const died = job.lease_owner !== null;
    const claimed = await leases.claim({ _id: job._id, status: "running", lease_owner: died ? { $ne: null } : null } as Filter<RunnerJob>);
    if (!claimed) continue;
    if (!died) return { job: claimed, takeover: true };
    // Its worker died holding it: an attempt, and one more without progress.
    await leases.update(claimed._id, claimed.epoch, { $inc: { attempts: 1, stalled: 1, version: 1 } });
    return { job: { ...claimed, attempts: claimed.attempts + 1, stalled: (claimed.stalled ?? 0) + 1, version: claimed.version + 1 }, takeover: true };
  }
  const busy = new Map<string, number>();
  for (const job of running) busy.set(tenantOf(job), (busy.get(tenantOf(job)) ?? 0) + 1);
  const runningOf = (head: Glance) => busy.get(tenantOf(head)) ?? 0;
  const withRoom: Glance[] = [];
  let walked = 0;
  for await (const head of queueHeads(jobs, after)) {
    if (++walked > busy.size + WALK_SLACK) break;
    const n = runningOf(head);
    if (n >= perAccount) continue;
    if (n > 0) {
      withRoom.push(head);
      continue;
    }
    const job = await takeSlot(jobs, head, owner, leaseMs, perAccount);
    if (job && job !== "full") return { job, takeover: false };
    // "full": its jobs started meanwhile; null: this head was canceled or claimed by another worker meanwhile.
  }
  // Every tenant with a queued job has one running: a second slot, to the tenant with the fewest (stable: rotation order).
  withRoom.sort((a, b) => runningOf(a) - runningOf(b));
  for (const head of withRoom) {
    const job = await takeSlot(jobs, head, owner, leaseMs, perAccount);
    if (job && job !== "full") return { job, takeover: false };
  }
  return null;
}

/** Orders tenants as the claim index does: by account, then test before live. */
function compareTenants(a: TenantKey, b: TenantKey): number {
  return a.account < b.account ? -1 : a.account > b.account ? 1 : Number(a.livemode) - Number(b.livemode);
}

/**
 * The tenants' queue heads (each tenant's oldest queued job) in tenant order, from the tenant after `after`
 * to the last, then from the first up to `after` itself. Each is one seek of the claim index; the walk
 * reads only as far as its caller goes.
 */
async function* queueHeads(jobs: Collection<RunnerJob>, after: TenantKey | null): AsyncGenerator<Glance> {
  let cursor = after;
  let wrapped = after === null;
  for (;;) {
    const head = await headAfter(jobs, cursor);
    if (head === null || (wrapped && after !== null && compareTenants(head, after) > 0)) {
      if (wrapped) return;
      wrapped = true;
      cursor = null;
      continue;
    }
    yield head;
    cursor = head;
  }
}

/** The queue head of the first tenant after `cursor` (of the first tenant at all when null) that has a queued job. */
async function headAfter(jobs: Collection<RunnerJob>, cursor: TenantKey | null): Promise<Glance | null> {
  const head = (filter: Record<string, unknown>) =>
    jobs.findOne({ status: "queued", ...filter } as Filter<RunnerJob>, {
      projection: GLANCE,
      sort: HEAD_ORDER,
      hint: CLAIM_INDEX_NAME,
    }) as Promise<Glance | null>;
  if (cursor === null) return head({});
  // The same account's live mode comes after its test mode.
  const live = cursor.livemode ? null : await head({ account: cursor.account, livemode: true });
  return live ?? head({ account: { $gt: cursor.account } });
}

async function takeSlot(
  jobs: Collection<RunnerJob>,
  candidate: Glance,
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
