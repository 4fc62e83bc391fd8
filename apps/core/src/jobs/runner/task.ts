import type { Filter } from "mongodb";
import { RESOURCES_COLLECTION } from "../../resources/store.js";
import { LeaseQueue } from "../../storage/lease.js";
import { HAS_PENDING_EVENTS } from "../../storage/relay.js";
import type { RunningTask, WorkerContext, WorkerTask } from "../../worker/task.js";
import { JOBS_COLLECTION, JOBS_QUEUE, type JobType } from "../model.js";
import { bulkExecutor } from "./bulk.js";
import { claimJob, ensureRunnerIndexes } from "./claim.js";
import { importExecutor } from "./import.js";
import { runJob } from "./run.js";
import type { Executor, RunnerJob } from "./seam.js";
import { DEFAULT_RETRY, type RetryPolicy } from "./transient.js";

export interface JobsTaskOptions {
  /** Jobs one worker process runs at once. */
  concurrency?: number;
  /** Wait between looks for work when there was none. */
  pollMs?: number;
  /** Overrides the lease of the settings (JOBS_LEASE_MS). */
  leaseMs?: number;
  /** Overrides the executors (tests: smaller chunks). */
  executors?: Partial<Record<JobType, Executor>>;
  /** Overrides the retry budget and backoff (tests: a small one). */
  retry?: RetryPolicy;
}

export const DEFAULT_CONCURRENCY = 2;
/**
 * Wait between full looks when there was nothing to take. New jobs and released ones move the queue
 * counter, which idle workers read every SIGNAL_POLL_MS (one document by `_id`); the full look (up to 200
 * unfinished jobs from the claim index) is for expired leases, which wait the lease anyway, and for a
 * lost signal.
 */
export const DEFAULT_POLL_MS = 1_000;
/** How often an idle worker reads the queue counter between its looks. */
const SIGNAL_POLL_MS = 20;
/** Resources with pending events looked up at a takeover, so the relay moves what the dead worker's relay never did. */
const CATCH_UP_LIMIT = 20_000;

/**
 * The jobs worker task: a few lanes, each claiming a job (claim.ts), running it chunk by chunk with
 * checkpoints (run.ts), then claiming the next. `stop` (SIGTERM) lets each lane finish its chunk,
 * checkpoint it and release its job at once, so another worker continues without waiting for a lease
 * to expire.
 */
export function jobsTask(options: JobsTaskOptions = {}): WorkerTask {
  return {
    name: "jobs",
    start(context: WorkerContext): RunningTask {
      const leaseMs = options.leaseMs ?? context.settings.jobsLeaseMs;
      const jobs = context.db.collection<RunnerJob>(JOBS_COLLECTION);
      const leases = new LeaseQueue<RunnerJob>(jobs, { owner: context.workerId, leaseMs });
      const executors: Record<JobType, Executor> = {
        "resources.import": importExecutor(),
        "resources.bulk_update": bulkExecutor("update"),
        "resources.bulk_delete": bulkExecutor("delete"),
        ...options.executors,
      };
      let stopping = false;
      // Sleeps in hand, so `stop` ends them at once (each removes itself when it ends).
      const sleeping = new Set<() => void>();
      const sleep = (ms: number) =>
        new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            sleeping.delete(done);
            resolve();
          };
          const timer = setTimeout(done, ms);
          sleeping.add(done);
        });
      const ready = ensureRunnerIndexes(jobs).catch((error: unknown) => context.logger.warn({ err: error }, "jobs: index not ensured"));

      // The lanes share their looks: when one found nothing, the others wait for the next poll too,
      // so an idle worker reads the jobs collection once per poll, not once per lane.
      let nothingUntil = 0;
      // Between looks, the queue counter (one small read, shared by the lanes) ends the wait when a job was queued.
      let seenSignal: number | null = null;
      let signalRead: Promise<void> | null = null;
      const readSignal = () => {
        signalRead ??= JOBS_QUEUE.read(context.db)
          .then(
            (signal) => {
              if (seenSignal !== null && signal !== seenSignal) nothingUntil = 0;
              seenSignal = signal;
            },
            () => {},
          )
          .finally(() => {
            signalRead = null;
          });
        return signalRead;
      };
      const lane = async () => {
        await ready;
        while (!stopping) {
          const wait = nothingUntil - Date.now();
          if (wait > 0) {
            await sleep(Math.min(wait, SIGNAL_POLL_MS));
            if (!stopping) await readSignal();
            continue;
          }
          if (seenSignal === null) await readSignal();
          let claimed: Awaited<ReturnType<typeof claimJob>> = null;
          try {
            claimed = await claimJob(jobs, leases, context.workerId, leaseMs, context.settings.jobsPerAccount);
          } catch (error) {
            context.logger.warn({ err: error }, "jobs: claim failed");
          }
          if (!claimed) {
            nothingUntil = Date.now() + (options.pollMs ?? DEFAULT_POLL_MS);
            continue;
          }
          const { job, takeover } = claimed;
          context.logger.info({ job: job._id, type: job.type, epoch: job.epoch, takeover }, "jobs: claimed");
          if (takeover) void catchUp(context, job);
          try {
            await runJob(job, executors[job.type], {
              db: context.db,
              logger: context.logger,
              owner: context.workerId,
              leaseMs,
              leases,
              written: context.written,
              stopping: () => stopping,
              sleep,
              retry: options.retry ?? DEFAULT_RETRY,
            });
          } catch (error) {
            // Left to its lease: another attempt (here or elsewhere) takes it over once it runs out.
            context.logger.error({ err: error, job: job._id }, "jobs: run ended on an error");
          }
        }
      };
      const lanes = Array.from({ length: options.concurrency ?? DEFAULT_CONCURRENCY }, lane);
      return {
        async stop() {
          stopping = true;
          for (const done of [...sleeping]) done();
          await Promise.allSettled(lanes);
        },
      };
    },
  };
}

/**
 * After a takeover: the worker before may have died with resources whose events its relay had not yet
 * moved; core's sweep would find them, a hundred every few seconds. Tell this worker's relay of the
 * tenant's resources with pending events instead (a bounded lookup, once per takeover).
 */
export async function catchUp(context: WorkerContext, job: Pick<RunnerJob, "_id" | "account" | "livemode">): Promise<void> {
  try {
    const stuck = await context.db
      .collection<{ _id: string }>(RESOURCES_COLLECTION)
      .find({ account: job.account, livemode: job.livemode, ...HAS_PENDING_EVENTS } as Filter<{ _id: string }>, { projection: { _id: 1 } })
      .limit(CATCH_UP_LIMIT)
      .toArray();
    for (const { _id } of stuck) context.written(RESOURCES_COLLECTION, _id);
  } catch (error) {
    context.logger.warn({ err: error, job: job._id }, "jobs: catch-up of pending events failed");
  }
}
