#!/usr/bin/env node
// Entry point of a worker process (webhook deliveries, jobs): the same package as core, run by count.
import { ConfigError } from "@rms/config";
import { pino } from "pino";
import { parseWorkerConfig, type WorkerConfig } from "./config.js";
import { startWorker } from "./run.js";

async function main(): Promise<void> {
  let config: WorkerConfig;
  try {
    config = parseWorkerConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`rms-worker: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = pino({ level: config.logLevel, base: { service: "worker" } }, pino.destination({ sync: false }));
  const worker = await startWorker({ mongoUri: config.mongoUri, databaseName: config.databaseName, logger, settings: config.settings, metricsPort: config.metricsPort });
  logger.info({ worker: worker.workerId, metrics_port: worker.metricsPort }, "worker running");

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "worker stopping");
    worker.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "worker stop failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  if (config.supervised) process.stdin.on("end", () => shutdown("launcher gone")).resume();
}

main().catch((error: unknown) => {
  process.stderr.write(`rms-worker: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
