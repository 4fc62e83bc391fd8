import type { Db } from "mongodb";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { CoreSettings } from "../../settings.js";

/** What a worker process hands each of its tasks. */
export interface WorkerContext {
  readonly db: Db;
  readonly logger: Logger;
  /** Unique per worker process: the lease owner of what this process claims. */
  readonly workerId: string;
  /** Tells this process's relay which document a write just changed (storage/relay.ts); never waits. */
  readonly written: (collection: string, id: string) => void;
  readonly settings: CoreSettings;
  /**
   * The process's Prometheus registry, served at the worker's `/metrics` (WORKER_METRICS_PORT): a task
   * registers its own metrics here (metrics-registry.ts `counterIn` and friends), named after its work.
   */
  readonly metrics: Registry;
}

/**
 * A kind of background work a worker process runs (webhook deliveries, jobs). Tasks share nothing but the
 * database with other processes; any number of workers may run the same task.
 */
export interface WorkerTask {
  readonly name: string;
  start(context: WorkerContext): RunningTask;
}

export interface RunningTask {
  /** Stop taking work; checkpoint and release what is held (SIGTERM), then resolve. */
  stop(): Promise<void>;
}
