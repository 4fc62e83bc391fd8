// The jobs task: the shared poller over the jobs queue of jobs/runner/.
import { eventPublisher } from "../../event-relay.js";
import type { Claimed } from "../../jobs/runner/claim.js";
import { JobQueue, type JobQueueOptions } from "../../jobs/runner/queue.js";
import { JOBS_QUEUE } from "../../jobs/model.js";
import { JobFiles } from "../../files/for-jobs.js";
import { QueuePoller, queueTask } from "./poller.js";
import type { WorkerTask } from "./task.js";

/** Jobs one worker process runs at once (its lanes). */
export const DEFAULT_CONCURRENCY = 2;
/**
 * Wait between full looks when there was nothing to take. New jobs and released ones move the queue
 * counter, which a change stream watches (QueueSignal.watch: it wakes an idle worker at once) and idle
 * workers read (one document by `_id`); the full look (the running jobs and the tenants' queue heads from
 * the claim index, jobs/runner/claim.ts) is for expired leases, which wait the lease anyway, and for a lost
 * signal.
 */
export const DEFAULT_POLL_MS = 1_000;
/**
 * How often an idle worker reads the queue counter between its looks while its wake-up stream is not open
 * (not yet, or failed); while it is, every WAKE_UP_BACKSTOP_MS (poller.ts).
 */
export const SIGNAL_POLL_MS = 20;

export interface JobsTaskOptions extends Pick<JobQueueOptions, "executors" | "retry"> {
  /** Jobs one worker process runs at once. */
  concurrency?: number;
  /** Wait between looks for work when there was none. */
  pollMs?: number;
  /** Overrides the lease of the settings (JOBS_LEASE_MS). */
  leaseMs?: number;
}

/**
 * The jobs task: a few lanes, each running a job the jobs domain claims and runs (jobs/runner/queue.ts),
 * then claiming the next. `stop` (SIGTERM) lets each lane finish its chunk, checkpoint it and release its
 * job at once, so another worker continues without waiting for a lease to expire.
 */
export function jobsTask(options: JobsTaskOptions = {}): WorkerTask {
  return queueTask("jobs", (context) => {
    const { db, logger, settings } = context;
    const queue = new JobQueue({
      db,
      files: new JobFiles(db, { streamLeaseMs: settings.filesWriteLeaseMs }),
      logger,
      owner: context.workerId,
      leaseMs: options.leaseMs ?? settings.jobsLeaseMs,
      perAccount: settings.jobsPerAccount,
      written: context.written,
      // A bulk job's chunks write their events in their own transactions (docs/events.md, "Events in the same batch").
      publish: eventPublisher(db, context.metrics),
      ...(options.executors ? { executors: options.executors } : {}),
      ...(options.retry ? { retry: options.retry } : {}),
    });
    const poller = new QueuePoller<Claimed>({
      name: "jobs",
      logger,
      concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
      claim: () => queue.claim(),
      work: (claimed, lane) => queue.process(claimed, lane),
      signal: () => JOBS_QUEUE.read(db),
      wakeUps: (wake, streamOpen) => JOBS_QUEUE.watch(db, wake, logger, streamOpen),
      signalEveryMs: SIGNAL_POLL_MS,
      idleMs: options.pollMs ?? DEFAULT_POLL_MS,
    });
    return { indexes: queue.ensureIndexes(), poller };
  });
}
