import type { Collection, Filter } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import type { JobDocument } from "./model.js";

/**
 * JOBS_QUEUED_PER_ACCOUNT without a counter (docs/architecture.md, "Limits without counters: slots"): an
 * unfinished job holds one of its tenant's places `queue_slot` 0..N-1, unique with account and mode. The
 * create's insert takes a free one (a duplicate key means a concurrent create took it: the next one); the
 * write that finishes the job (the runner's finish, the cancel of a queued job) `$unset`s it in the same
 * update. No second write can be lost by a crash, so no count can drift, and concurrent creates at the
 * limit cannot pass it: the index refuses the second holder of a place.
 */
export const QUEUE_SLOT_INDEX_NAME = "tenant_queue_slot_unique";

/** What the finishing write of a job `$unset`s (with the runner's `run_slot`). */
export const QUEUE_SLOT_RELEASE = { queue_slot: "" } as const;

/** Partial: only the unfinished jobs hold a place, so the finished ones the 30 days keep are not in it. */
export async function ensureQueueSlotIndex(jobs: Collection<JobDocument>): Promise<void> {
  await jobs.createIndex(
    { account: 1, livemode: 1, queue_slot: 1 },
    { unique: true, name: QUEUE_SLOT_INDEX_NAME, partialFilterExpression: { queue_slot: { $exists: true } } },
  );
}

/**
 * The tenant's free places, from a random one on and wrapping, so concurrent creates seldom try the same
 * place first. One read of at most `limit` index keys (the held places; covered by the index).
 */
export async function freeQueueSlots(jobs: Collection<JobDocument>, tenant: Tenant, limit: number, budget: Budget = UNBOUNDED): Promise<number[]> {
  const held = await jobs
    .find({ account: tenant.account, livemode: tenant.livemode, queue_slot: { $exists: true } } as Filter<JobDocument>, {
      projection: { _id: 0, queue_slot: 1 },
      ...budget.db(),
    })
    .toArray();
  const taken = new Set(held.map((d) => d.queue_slot));
  const free = [...Array(limit).keys()].filter((n) => !taken.has(n));
  const start = Math.floor(Math.random() * free.length);
  return [...free.slice(start), ...free.slice(0, start)];
}
