#!/usr/bin/env node
// Entry point of a worker process (webhook deliveries, jobs): the same package as core, run by count.
import { runProcess } from "@rms/config";
import { pino } from "pino";
import { parseWorkerConfig } from "./config.js";
import { startWorker } from "./run.js";

void runProcess({
  name: "rms-worker",
  config: parseWorkerConfig,
  logger: (config) => pino({ level: config.logLevel, base: { service: "worker" } }, pino.destination({ sync: false })),
  async start(config, logger) {
    const worker = await startWorker({ mongoUri: config.mongoUri, databaseName: config.databaseName, logger, settings: config.settings, metricsPort: config.metricsPort });
    logger.info({ worker: worker.workerId, metrics_port: worker.metricsPort }, "worker running");
    return worker;
  },
});
