import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { startMetricsServer, type MetricsServer } from "@rms/metrics-server";
import type { MongoClient } from "mongodb";
import { pino, type Logger } from "pino";
import type { Registry } from "prom-client";
import { eventRelay } from "../event-relay.js";
import { openClient } from "../storage/client-options.js";
import { watchCommands } from "../metrics.js";
import { DEFAULT_SETTINGS, type CoreSettings } from "../settings.js";
import { workerRegistry } from "./metrics.js";
import type { RunningTask, WorkerContext, WorkerTask } from "./tasks/task.js";
import { WORKER_TASKS } from "./tasks/index.js";
import { throughOutage } from "../storage/through-outage.js";
import { migrate, type MigrationStep } from "../migrations/index.js";
import { RELEASE } from "@rms/config";

export interface WorkerOptions {
  mongoUri: string;
  databaseName: string;
  logger?: Logger;
  settings?: Partial<CoreSettings>;
  /** The tasks to run; every registered one (tasks/index.ts) by default. */
  tasks?: readonly WorkerTask[];
  /** Lease owner name; a fresh unique one by default. */
  workerId?: string;
  /** Port of `GET /metrics` on 127.0.0.1 (0 picks a free one); no metrics server when omitted. */
  metricsPort?: number;
  /** The migration steps the data must have had before any task runs (every step by default). */
  migrations?: { steps?: readonly MigrationStep[] };
}

export interface RunningWorker {
  readonly workerId: string;
  readonly mongo: MongoClient;
  /** The registry the tasks count into (served on `metricsPort` when given). */
  readonly metrics: Registry;
  /** The bound metrics port, or null when not served. */
  readonly metricsPort: number | null;
  /** Stops every task (each checkpoints and releases its work), then the relay, then closes the database. */
  stop(): Promise<void>;
}

/** A new lease owner name: host, pid and random, so two processes never share one. */
export function newWorkerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
}

/**
 * Starts a worker: the background tasks over the database, with a relay of its own for the events its
 * writes leave in outboxes (the fast path; core's sweep finds anything a crash leaves).
 */
export async function startWorker(options: WorkerOptions): Promise<RunningWorker> {
  const logger = options.logger ?? pino({ level: "silent" });
  const metrics = workerRegistry();
  // Not connected yet: a URI that weakens the client's options stops the start here.
  const mongo = openClient(options.mongoUri);
  // Bound before anything runs: a port already taken stops the start, as it does core's.
  const metricsServer: MetricsServer | null = options.metricsPort === undefined ? null : await startMetricsServer(metrics, options.metricsPort);
  watchCommands(mongo, metrics);
  try {
    // A worker started while the database has no primary (an election, a partition) waits for it, as core does.
    await throughOutage(() => mongo.connect(), { logger, what: "worker connection" });
  } catch (error) {
    await metricsServer?.close();
    throw error;
  }
  const db = mongo.db(options.databaseName);
  const workerId = options.workerId ?? newWorkerId();
  try {
    // No task touches data before it has this release's shape (docs/migrations.md): a core normally runs the steps
    // first and this waits for it; a worker that finds none running (started before any core) runs them itself.
    const steps = options.migrations?.steps ? { steps: options.migrations.steps } : {};
    await throughOutage(() => migrate(db, { owner: `worker ${workerId}`, release: RELEASE, logger, ...steps }), { logger, what: "migrations" });
  } catch (error) {
    await mongo.close();
    await metricsServer?.close();
    throw error;
  }
  const relay = eventRelay(db, logger, metrics);
  const context: WorkerContext = {
    db,
    logger,
    workerId,
    written: (collection, id) => relay.notify(collection, id),
    settings: { ...DEFAULT_SETTINGS, ...options.settings },
    metrics,
  };
  const running: RunningTask[] = [];
  for (const task of options.tasks ?? WORKER_TASKS) {
    running.push(task.start(context));
    logger.info({ task: task.name, worker: workerId }, "worker task started");
  }
  return {
    workerId,
    mongo,
    metrics,
    metricsPort: metricsServer?.port ?? null,
    async stop() {
      await Promise.allSettled(running.map((task) => task.stop()));
      await relay.stop();
      await mongo.close();
      await metricsServer?.close();
    },
  };
}
