import type { Collection, Db, Filter } from "mongodb";
import type { PublishInTransaction } from "../../storage/published-events.js";
import type { Logger } from "pino";
import type { Loaded } from "../../storage/documents.js";
import { FencedOut } from "../../storage/byte-store.js";
import type { LeaseQueue } from "../../storage/lease.js";
import { newEvent } from "../../storage/outbox.js";
import { JOB_ITEMS_COLLECTION, type JobItemsPage } from "./bulk.js";
import type { JobFiles } from "../files.js";
import type { JobErrorDocument, JobEvent, JobResult, JobStatus } from "../model.js";
import { JOB_ERRORS_COLLECTION, JOBS_COLLECTION, JOBS_QUEUE, jobDocumentIds, jobRetainUntil, resultCountName } from "../model.js";
import { QUEUE_SLOT_RELEASE } from "../queue-limit.js";
import { jobSnapshot } from "../render.js";
import { isTransient, type RetryPolicy } from "./transient.js";
import { type Checkpoint, type CheckpointOutcome, type Executor, JobFailure, type JobRun, type RunnerJob } from "./seam.js";
import { RunTransactions } from "./transactions.js";

export interface RunOptions {
  db: Db;
  files: JobFiles;
  logger: Logger;
  owner: string;
  leaseMs: number;
  leases: LeaseQueue<RunnerJob>;
  written: (collection: string, id: string) => void;
  /** Writes a chunk's events in its transaction (storage/published-events.ts). */
  publish: PublishInTransaction;
  /** True once the worker is stopping (SIGTERM): checkpoint and release at the next chunk boundary. */
  stopping: () => boolean;
  sleep: (ms: number) => Promise<void>;
  retry: RetryPolicy;
}

type FinalStatus = Extract<JobStatus, "succeeded" | "failed" | "canceled">;
type JobError = { code: string; message: string };

/**
 * Runs one claimed job to its end, or until the worker stops (checkpoint, release) or loses the lease
 * (a heartbeat or a guarded write found another epoch: stop without writing). The database-backed
 * side of the seam: checkpoints are epoch-guarded writes on the job document, the heartbeat renews
 * the lease, and the finish writes status, result and the `job.*` event in one update.
 */
export async function runJob(claimed: RunnerJob, executor: Executor, options: RunOptions): Promise<void> {
  const run = new ClaimedRun(claimed, executor, options);
  const heartbeat = run.heartbeat();
  try {
    await run.toTheEnd();
  } finally {
    clearInterval(heartbeat);
    await run.end();
  }
}

/** One claimed job as this worker runs it: where it stands (the checkpoint, the counts) and whether the lease is still held. */
class ClaimedRun {
  private readonly jobs: Collection<RunnerJob>;
  private readonly run: JobRun;
  private readonly transactions: RunTransactions;
  /** A heartbeat or a guarded write found another epoch: nothing more is written. */
  private lost = false;
  private state: Checkpoint;
  private stalled: number;
  private attempts: number;

  constructor(
    private readonly job: RunnerJob,
    private readonly executor: Executor,
    private readonly options: RunOptions,
  ) {
    this.jobs = options.db.collection<RunnerJob>(JOBS_COLLECTION);
    this.transactions = new RunTransactions(options.db, job, options.owner, options.logger);
    this.run = {
      db: options.db,
      files: options.files,
      job,
      stalled: () => this.stalled,
      written: (collection, ids) => {
        for (const id of ids) options.written(collection, id);
      },
      inTransaction: (work) => this.transactions.run(work),
      publish: options.publish,
    };
    this.state = job.checkpoint!;
    this.stalled = job.stalled ?? 0;
    this.attempts = job.attempts;
  }

  /** Ends the run's transactions' session. */
  end(): Promise<void> {
    return this.transactions.end();
  }

  /** Renews the lease every lease/3; a renewal that finds another epoch stops the run at its next step. */
  heartbeat(): NodeJS.Timeout {
    return setInterval(
      () => {
        this.options.leases.renew(this.job._id, this.job.epoch).then(
          (held) => {
            if (!held) this.lost = true;
          },
          () => {}, // the database did not answer: the next beat tries again; if the lease runs out, another worker takes over
        );
      },
      Math.max(50, Math.floor(this.options.leaseMs / 3)),
    );
  }

  /** Chunk after chunk until the job is finished, the worker stops (release) or the lease is lost. */
  async toTheEnd(): Promise<void> {
    if (this.job.cancel_requested_at !== null) return this.finish("canceled");
    if (this.stalled >= this.options.retry.maxStalled) return this.outOfRetries();
    while (!this.lost) {
      if (this.options.stopping()) return this.release();
      if (await this.nextChunk()) return;
    }
  }

  /** Released for another worker to go on at once: the queue counter wakes the idle ones. */
  private async release(): Promise<void> {
    if (await this.options.leases.release(this.job._id, this.job.epoch)) await JOBS_QUEUE.signal(this.options.db);
  }

  /** One chunk and its checkpoint, or what its failure calls for; true when the run has ended. */
  private async nextChunk(): Promise<boolean> {
    try {
      return await this.step();
    } catch (error) {
      return this.afterFailure(error);
    }
  }

  /** The executor's next chunk, then the checkpoint (or the finish when every item is done, or a cancel was asked for). */
  private async step(): Promise<boolean> {
    const next = await this.executor.step(this.run, this.state);
    if (next === null) {
      await this.finish("succeeded");
      return true;
    }
    const outcome = await this.checkpoint(next);
    if (outcome === "lost") return true;
    this.state = next;
    if (outcome === "continue") return false;
    await this.finish("canceled");
    return true;
  }

  /** A transient failure is retried after a backoff (the chunk is redone, idempotently) until the budget is spent; any other fails the job. */
  private async afterFailure(error: unknown): Promise<boolean> {
    const { logger, retry } = this.options;
    if (error instanceof FencedOut) {
      // Its successor wrote there: the job is another worker's now, and nothing more is written.
      this.lost = true;
      return true;
    }
    if (error instanceof JobFailure) {
      await this.finish("failed", { code: error.code, message: error.message });
      return true;
    }
    if (!isTransient(error)) {
      logger.error(
        { err: error, name: (error as Error)?.name, code: (error as { code?: unknown })?.code, job: this.job._id },
        "job failed on an unexpected error",
      );
      await this.finish("failed", { code: "internal_error", message: "The job stopped on an internal error." });
      return true;
    }
    this.attempts++;
    this.stalled++;
    logger.warn({ err: error, job: this.job._id, attempts: this.attempts }, "job step failed; retrying");
    if (this.stalled >= retry.maxStalled) {
      await this.outOfRetries();
      return true;
    }
    await this.options.sleep(retry.backoffMs(this.stalled));
    // Counted on the job when the database answers; if it does not, the next checkpoint or the finish writes the count.
    await this.guarded({ $set: { attempts: this.attempts, stalled: this.stalled }, $inc: { version: 1 } }).catch(() => {});
    return false;
  }

  /** The retry budget is spent: the job fails, written as soon as the database answers again. */
  private async outOfRetries(): Promise<void> {
    this.options.logger.warn({ job: this.job._id, attempts: this.attempts }, "job out of retries");
    await this.finish("failed", retriesExhausted(this.attempts));
  }

  /** One write guarded by the lease's epoch; returns the job after it, or null when the lease is lost. */
  private async guarded(update: Record<string, unknown>): Promise<RunnerJob | null> {
    const after = await this.jobs.findOneAndUpdate({ _id: this.job._id, epoch: this.job.epoch, lease_owner: this.options.owner } as Filter<RunnerJob>, update, {
      returnDocument: "after",
      projection: { pending_events: 0, params: 0 },
    });
    if (!after) this.lost = true;
    return after;
  }

  /** The chunk's checkpoint (a transient failure is thrown: the chunk is redone, idempotently, after a backoff). */
  private async checkpoint(next: Checkpoint): Promise<CheckpointOutcome> {
    const after = await this.guarded({
      $set: { checkpoint: next, progress: progressOf(next, this.job), attempts: this.attempts, stalled: 0, lease_until: Date.now() + this.options.leaseMs },
      $inc: { version: 1 },
    });
    this.stalled = 0;
    if (!after) return "lost";
    return after.cancel_requested_at !== null ? "cancel" : "continue";
  }

  /**
   * The last write: status, result, the finish time and the `job.*` event, with the lease and the slot given
   * back. The outcome is decided; while only the database is missing it is tried again (the lease keeps other
   * workers off, and they cannot claim without a database either), unless the worker is stopping.
   */
  private async finish(status: FinalStatus, error: JobError | null = null): Promise<void> {
    for (let tries = 1; !this.lost; tries++) {
      try {
        if (await this.finishOnce(status, error)) return;
        // The version moved (a cancel request came in): read again and write again.
      } catch (failure) {
        if (!isTransient(failure) || this.options.stopping()) throw failure;
        await this.options.sleep(this.options.retry.backoffMs(Math.min(tries, this.options.retry.maxStalled)));
      }
    }
  }

  /** The finishing write from a fresh read of the job; false when the job's version moved in between. */
  private async finishOnce(status: FinalStatus, error: JobError | null): Promise<boolean> {
    const { db, owner } = this.options;
    const job = this.job;
    const current = await this.jobs.findOne({ _id: job._id } as Filter<RunnerJob>, { projection: { pending_events: 0 } });
    if (!current || current.epoch !== job.epoch || current.lease_owner !== owner) {
      this.lost = true;
      return true;
    }
    // A checkpoint can commit while its answer is lost (the database went away after the write): the
    // stored one is then further than ours, and it is what the job has done.
    if (current.checkpoint && current.checkpoint.next > this.state.next) this.state = current.checkpoint;
    // The job's files settle first (idempotent: a finish redone after a takeover settles them again).
    const files = this.executor.finish ? await this.executor.finish(this.run, this.state, status) : {};
    const nowMs = Date.now();
    const finished = this.finished(current, status, error, nowMs, files);
    const event = {
      ...newEvent(`job.${status}` as JobEvent["type"], job, jobSnapshot(finished), { requestId: null, idempotencyKey: null }, null, nowMs),
      sequence: finished.version,
    } as JobEvent;
    // The job's errors expire with it, its items pages a day after the finish (nothing reads them once it
    // is finished); stamped first, so a crash after the finishing write leaves none of them without an
    // expiry (a finish that loses its race stamps them again).
    const retainUntil = jobRetainUntil(finished.finished_at!);
    await expireWithJob(db, job._id, retainUntil, new Date(nowMs + JOB_ITEMS_GRACE_MS));
    const written = await this.jobs.updateOne(
      { _id: job._id, epoch: job.epoch, lease_owner: owner, version: current.version } as Filter<RunnerJob>,
      {
        $set: {
          status,
          result: finished.result,
          error,
          progress: finished.progress,
          finished_at: finished.finished_at,
          lease_owner: null,
          lease_until: null,
          checkpoint: this.state,
          attempts: this.attempts,
          stalled: this.stalled,
          retain_until: retainUntil,
        },
        // Both slots are given back with the finish: JOBS_PER_ACCOUNT's and JOBS_QUEUED_PER_ACCOUNT's.
        $unset: { run_slot: "", ...QUEUE_SLOT_RELEASE },
        $inc: { version: 1 },
        $push: { pending_events: event },
      } as never,
    );
    if (written.modifiedCount !== 1) return false;
    this.options.written(JOBS_COLLECTION, job._id);
    // The items pages serve only a running job: gone at once (by the `_id` range `<job>:`, which `_id_`
    // serves); their expiry removes what a crash here or a failed delete leaves.
    await db
      .collection<JobItemsPage>(JOB_ITEMS_COLLECTION)
      .deleteMany({ _id: jobDocumentIds(job._id) })
      .catch((failure: unknown) =>
        this.options.logger.warn({ err: failure, job: job._id }, "jobs: items pages not deleted at the finish; their expiry removes them"),
      );
    return true;
  }

  /** The job as the finishing write leaves it (what its `job.*` event shows). */
  private finished(current: RunnerJob, status: FinalStatus, error: JobError | null, nowMs: number, files: Partial<JobResult>): Loaded<RunnerJob> {
    const result: JobResult = { [resultCountName(this.job.type)]: this.state.done, errors: this.state.errors, ...files };
    return {
      ...current,
      attempts: this.attempts,
      status,
      result,
      error,
      progress: progressOf(this.state, this.job),
      finished_at: Math.floor(nowMs / 1000),
      version: current.version + 1,
    } as Loaded<RunnerJob>;
  }
}

/**
 * How long a finished job's items pages may outlive its finish when the delete after it did not happen (a
 * crash, a failed delete): the TTL index removes them then. Not the job's 30 days: nothing reads them.
 */
export const JOB_ITEMS_GRACE_MS = 24 * 60 * 60 * 1000;

/** Gives a job's errors the job's expiry and its items pages `itemsAt` (both by `_id`, `<job>:<n>`). */
export async function expireWithJob(db: Db, job: string, at: Date, itemsAt: Date = at): Promise<void> {
  const mine = { _id: jobDocumentIds(job) };
  await db.collection<JobErrorDocument>(JOB_ERRORS_COLLECTION).updateMany(mine, { $set: { expires_at: at } });
  await db.collection<JobItemsPage>(JOB_ITEMS_COLLECTION).updateMany(mine, { $set: { expires_at: itemsAt } });
}

function retriesExhausted(attempts: number): JobError {
  return { code: "service_unavailable", message: `The job failed after ${attempts} attempts: the database did not answer in time.` };
}

function progressOf(state: Checkpoint, job: RunnerJob): RunnerJob["progress"] {
  return { total: totalOf(state, job), processed: state.next, failed: state.failed, skipped: state.skipped };
}

/**
 * `progress.total` once known: an import's rows once its scan is done (an inline import's from create), a bulk job's
 * matches once recorded, an export's rows once written.
 */
function totalOf(state: Checkpoint, job: RunnerJob): number | null {
  if (state.import) return state.import.phase === "rows" ? state.import.total : job.progress.total;
  if (state.export) return state.export.complete ? state.next : null;
  if (state.snapshot) return state.snapshot.complete ? state.snapshot.total : null;
  return job.progress.total;
}
