import type { Collection, Db, Filter } from "mongodb";
import type { Logger } from "pino";
import type { Loaded } from "../../storage/documents.js";
import type { LeaseQueue } from "../../storage/lease.js";
import { newEvent } from "../../storage/outbox.js";
import { JOB_ITEMS_COLLECTION, type JobItemsPage } from "./bulk.js";
import type { JobErrorDocument, JobEvent, JobResult, JobStatus } from "../model.js";
import { JOB_ERRORS_COLLECTION, JOBS_COLLECTION, JOBS_QUEUE, jobDocumentIds, jobRetainUntil } from "../model.js";
import { jobSnapshot } from "../render.js";
import { isTransient, type RetryPolicy } from "./transient.js";
import type { Checkpoint, CheckpointOutcome, Executor, JobRun, RunnerJob } from "./seam.js";

export interface RunOptions {
  db: Db;
  logger: Logger;
  owner: string;
  leaseMs: number;
  leases: LeaseQueue<RunnerJob>;
  written: (collection: string, id: string) => void;
  /** True once the worker is stopping (SIGTERM): checkpoint and release at the next chunk boundary. */
  stopping: () => boolean;
  sleep: (ms: number) => Promise<void>;
  retry: RetryPolicy;
}

const COUNT_NAME = { "resources.import": "created", "resources.bulk_update": "updated", "resources.bulk_delete": "deleted" } as const;

/**
 * Runs one claimed job to its end, or until the worker stops (checkpoint, release) or loses the lease
 * (a heartbeat or a guarded write found another epoch: stop without writing). The database-backed
 * side of the seam: checkpoints are epoch-guarded writes on the job document, the heartbeat renews
 * the lease, and the finish writes status, result and the `job.*` event in one update.
 */
export async function runJob(claimed: RunnerJob, executor: Executor, options: RunOptions): Promise<void> {
  const jobs = options.db.collection<RunnerJob>(JOBS_COLLECTION);
  const job = claimed;
  let lost = false;
  const heartbeat = setInterval(
    () => {
      options.leases.renew(job._id, job.epoch).then(
        (held) => {
          if (!held) lost = true;
        },
        () => {}, // the database did not answer: the next beat tries again; if the lease runs out, another worker takes over
      );
    },
    Math.max(50, Math.floor(options.leaseMs / 3)),
  );
  const run: JobRun = {
    db: options.db,
    job,
    written: (collection, ids) => {
      for (const id of ids) options.written(collection, id);
    },
  };
  let state: Checkpoint = job.checkpoint!;
  let version = job.version;
  let stalled = job.stalled ?? 0;
  let attempts = job.attempts;
  try {
    if (job.cancel_requested_at !== null) {
      await finish("canceled");
      return;
    }
    if (stalled >= options.retry.maxStalled) {
      await outOfRetries();
      return;
    }
    for (;;) {
      if (lost) return;
      if (options.stopping()) {
        // Released for another worker to go on at once: the queue counter wakes the idle ones.
        if (await options.leases.release(job._id, job.epoch)) await JOBS_QUEUE.signal(options.db);
        return;
      }
      let next: Checkpoint | null;
      try {
        next = await executor.step(run, state);
        if (next === null) {
          await finish("succeeded");
          return;
        }
        const outcome = await checkpoint(next);
        if (outcome === "lost") return;
        state = next;
        if (outcome === "cancel") {
          await finish("canceled");
          return;
        }
      } catch (error) {
        if (!isTransient(error)) {
          options.logger.error({ err: error, name: (error as Error)?.name, code: (error as { code?: unknown })?.code, job: job._id }, "job failed on an unexpected error");
          await finish("failed", { code: "internal_error", message: "The job stopped on an internal error." });
          return;
        }
        attempts++;
        stalled++;
        options.logger.warn({ err: error, job: job._id, attempts }, "job step failed; retrying");
        if (stalled >= options.retry.maxStalled) {
          await outOfRetries();
          return;
        }
        await options.sleep(options.retry.backoffMs(stalled));
        // Counted on the job when the database answers; if it does not, the next checkpoint or the finish writes the count.
        await guarded({ $set: { attempts, stalled }, $inc: { version: 1 } }).catch(() => {});
      }
    }
  } finally {
    clearInterval(heartbeat);
  }

  /** The retry budget is spent: the job fails, written as soon as the database answers again. */
  async function outOfRetries(): Promise<void> {
    options.logger.warn({ job: job._id, attempts }, "job out of retries");
    await finish("failed", retriesExhausted(attempts));
  }

  /** One write guarded by the lease's epoch; returns the job after it, or null when the lease is lost. */
  async function guarded(update: Record<string, unknown>): Promise<RunnerJob | null> {
    const after = await jobs.findOneAndUpdate({ _id: job._id, epoch: job.epoch, lease_owner: options.owner } as Filter<RunnerJob>, update, {
      returnDocument: "after",
      projection: { pending_events: 0, params: 0 },
    });
    if (!after) lost = true;
    else version = after.version;
    return after;
  }

  /** The chunk's checkpoint (a transient failure is thrown: the chunk is redone, idempotently, after a backoff). */
  async function checkpoint(next: Checkpoint): Promise<CheckpointOutcome> {
    const after = await guarded({
      $set: { checkpoint: next, progress: progressOf(next, job), attempts, stalled: 0, lease_until: Date.now() + options.leaseMs },
      $inc: { version: 1 },
    });
    stalled = 0;
    if (!after) return "lost";
    return after.cancel_requested_at !== null ? "cancel" : "continue";
  }

  /** The last write: status, result, the finish time and the `job.*` event, with the lease and the slot given back. */
  async function finish(status: Extract<JobStatus, "succeeded" | "failed" | "canceled">, error: { code: string; message: string } | null = null): Promise<void> {
    for (let tries = 1; !lost; tries++) {
      try {
        const current = await jobs.findOne({ _id: job._id } as Filter<RunnerJob>, { projection: { pending_events: 0 } });
        if (!current || current.epoch !== job.epoch || current.lease_owner !== options.owner) {
          lost = true;
          return;
        }
        // A checkpoint can commit while its answer is lost (the database went away after the write): the
        // stored one is then further than ours, and it is what the job has done.
        if (current.checkpoint && current.checkpoint.next > state.next) state = current.checkpoint;
        const nowMs = Date.now();
        const result: JobResult = { [COUNT_NAME[job.type]]: state.done, errors: state.errors };
        const finished = {
          ...current,
          attempts,
          status,
          result,
          error,
          progress: progressOf(state, job),
          finished_at: Math.floor(nowMs / 1000),
          version: current.version + 1,
        } as Loaded<RunnerJob>;
        const event = {
          ...newEvent(`job.${status}` as JobEvent["type"], job, jobSnapshot(finished), { requestId: null, idempotencyKey: null }, null, nowMs),
          sequence: finished.version,
        } as JobEvent;
        // The job's errors and items pages expire with it; stamped first, so a crash after the finishing
        // write leaves none of them without an expiry (a finish that loses its race stamps them again).
        const retainUntil = jobRetainUntil(finished.finished_at!);
        await expireWithJob(options.db, job._id, retainUntil);
        const written = await jobs.updateOne(
          { _id: job._id, epoch: job.epoch, lease_owner: options.owner, version: current.version } as Filter<RunnerJob>,
          {
            $set: {
              status,
              result,
              error,
              progress: finished.progress,
              finished_at: finished.finished_at,
              lease_owner: null,
              lease_until: null,
              checkpoint: state,
              attempts,
              stalled,
              retain_until: retainUntil,
            },
            $unset: { run_slot: "" },
            $inc: { version: 1 },
            $push: { pending_events: event },
          } as never,
        );
        if (written.modifiedCount === 1) {
          options.written(JOBS_COLLECTION, job._id);
          // The items pages serve only a running job: gone at once (their expiry is the fallback after a crash here).
          await options.db
            .collection<JobItemsPage>(JOB_ITEMS_COLLECTION)
            .deleteMany({ _id: jobDocumentIds(job._id) })
            .catch(() => {});
          return;
        }
        // The version moved (a cancel request came in): read again and write again.
      } catch (failure) {
        // The outcome is decided; only the database is missing. Keep trying while it is away (the lease
        // keeps other workers off, and they cannot claim without a database either), unless stopping.
        if (!isTransient(failure) || options.stopping()) throw failure;
        await options.sleep(options.retry.backoffMs(Math.min(tries, options.retry.maxStalled)));
      }
    }
  }
}

/** Gives a job's errors and items pages the job's expiry (both by `_id`, `<job>:<n>`). */
export async function expireWithJob(db: Db, job: string, at: Date): Promise<void> {
  const mine = { _id: jobDocumentIds(job) };
  await db.collection<JobErrorDocument>(JOB_ERRORS_COLLECTION).updateMany(mine, { $set: { expires_at: at } });
  await db.collection<JobItemsPage>(JOB_ITEMS_COLLECTION).updateMany(mine, { $set: { expires_at: at } });
}

function retriesExhausted(attempts: number): { code: string; message: string } {
  return { code: "service_unavailable", message: `The job failed after ${attempts} attempts: the database did not answer in time.` };
}

function progressOf(state: Checkpoint, job: RunnerJob): RunnerJob["progress"] {
  const total = job.type === "resources.import" ? job.progress.total : state.snapshot?.complete ? state.snapshot.total : null;
  return { total, processed: state.next, failed: state.failed, skipped: state.skipped };
}
