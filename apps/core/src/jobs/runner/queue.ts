import { contextOfStored, inSpan, SpanKind } from "@rms/telemetry";
import type { Collection, Db, Filter } from "mongodb";
import type { Logger } from "pino";
import { RESOURCES_COLLECTION } from "../../resources/store.js";
import { LeaseQueue } from "../../storage/lease.js";
import type { PublishInTransaction } from "../../storage/published-events.js";
import { HAS_PENDING_EVENTS } from "../../storage/relay.js";
import { JOBS_COLLECTION, type JobType } from "../model.js";
import { bulkExecutor } from "./bulk.js";
import { claimJob, ensureRunnerIndexes, type Claimed, type TenantKey } from "./claim.js";
import { exportExecutor } from "./export.js";
import { importExecutor } from "./import.js";
import type { JobFiles } from "../files.js";
import { runJob, type RunOptions } from "./run.js";
import type { Executor, RunnerJob } from "./seam.js";
import { DEFAULT_RETRY, type RetryPolicy } from "./transient.js";

/** Resources with pending events looked up at a takeover, so the relay moves what the dead worker's relay never did. */
const CATCH_UP_LIMIT = 20_000;

/** What the jobs queue of one worker process works with. */
export interface JobQueueOptions {
  readonly db: Db;
  /** File storage: imports' input files, jobs' output files. */
  readonly files: JobFiles;
  readonly logger: Logger;
  /** The lease owner of what this process claims: unique per worker process. */
  readonly owner: string;
  /** How long a claim lasts without a heartbeat (JOBS_LEASE_MS). */
  readonly leaseMs: number;
  /** JOBS_PER_ACCOUNT. */
  readonly perAccount: number;
  /** Tells this process's relay which document a write just changed. */
  readonly written: (collection: string, id: string) => void;
  /** Writes a chunk's events in its transaction (event-relay.ts, eventPublisher). */
  readonly publish: PublishInTransaction;
  /** Overrides the executors (tests: smaller chunks). */
  readonly executors?: Partial<Record<JobType, Executor>>;
  /** Overrides the retry budget and backoff (tests: a small one). */
  readonly retry?: RetryPolicy;
}

/**
 * The jobs queue as one worker process takes from it: claims a job (claim.ts: a released or expired one
 * first, else a tenant's oldest queued job, tenants in turn, those with no job running first) and runs it chunk by chunk with
 * checkpoints (run.ts) until it ends or the worker stops (checkpoint, release at once).
 */
export class JobQueue {
  private readonly jobs: Collection<RunnerJob>;
  private readonly leases: LeaseQueue<RunnerJob>;
  private readonly executors: Record<JobType, Executor>;
  /** The tenant of this worker's last claim of a queued job: the next claim's walk over queue heads starts after it. */
  private last: TenantKey | null = null;

  constructor(private readonly options: JobQueueOptions) {
    this.jobs = options.db.collection<RunnerJob>(JOBS_COLLECTION);
    this.leases = new LeaseQueue<RunnerJob>(this.jobs, { owner: options.owner, leaseMs: options.leaseMs });
    this.executors = {
      "resources.import": importExecutor(),
      "resources.bulk_update": bulkExecutor("update"),
      "resources.bulk_delete": bulkExecutor("delete"),
      "resources.export": exportExecutor(),
      ...options.executors,
    };
  }

  /** The claim's index and the slots' (claim.ts). */
  ensureIndexes(): Promise<void> {
    return ensureRunnerIndexes(this.jobs);
  }

  async claim(): Promise<Claimed | null> {
    const { owner, leaseMs, perAccount } = this.options;
    const claimed = await claimJob(this.jobs, this.leases, owner, leaseMs, perAccount, this.last);
    if (claimed && !claimed.takeover) this.last = { account: claimed.job.account, livemode: claimed.job.livemode };
    return claimed;
  }

  /** Runs a claimed job to its end, or until `lane.stopping()` (then it checkpoints and releases the job). */
  async process({ job, takeover }: Claimed, lane: Pick<RunOptions, "stopping" | "sleep">): Promise<void> {
    const { db, files, logger, owner, leaseMs, written, publish } = this.options;
    if (takeover) void catchUp(this.options, job);
    // One span per claim, continuing the trace of the call that created the job (docs/observability.md, "Tracing");
    // the run's log lines carry its ids.
    const attributes = { "rms.job.id": job._id, "rms.job.type": job.type, "rms.job.epoch": job.epoch, "rms.job.takeover": takeover };
    try {
      await inSpan("job run", { kind: SpanKind.CONSUMER, attributes, parent: contextOfStored(job.trace) }, () => {
        logger.info({ job: job._id, type: job.type, epoch: job.epoch, takeover }, "jobs: claimed");
        return runJob(job, this.executors[job.type], {
          db,
          files,
          logger,
          owner,
          leaseMs,
          leases: this.leases,
          written,
          publish,
          ...lane,
          retry: this.options.retry ?? DEFAULT_RETRY,
        });
      });
    } catch (error) {
      // Left to its lease: another attempt (here or elsewhere) takes it over once it runs out.
      logger.error({ err: error, job: job._id }, "jobs: run ended on an error");
    }
  }
}

/**
 * After a takeover: the worker before may have died with resources whose events its relay had not yet
 * moved; core's sweep would find them, a hundred every few seconds. Tell this worker's relay of the
 * tenant's resources with pending events instead (a bounded lookup, once per takeover).
 */
export async function catchUp(
  context: Pick<JobQueueOptions, "db" | "logger" | "written">,
  job: Pick<RunnerJob, "_id" | "account" | "livemode">,
): Promise<void> {
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
