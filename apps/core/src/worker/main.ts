#!/usr/bin/env node
// Entry point of a worker process (webhook deliveries, jobs): the same package as core, run by count.
import { runProcess } from "@rms/config";
import { startTracing, tracedProcess, traceLogOptions } from "@rms/telemetry";
import { pino } from "pino";
import { parseWorkerConfig } from "./config.js";
import { startWorker } from "./run.js";

void runProcess({
  name: "rms-worker",
  config: parseWorkerConfig,
  // Lines written inside a span (a delivery, a job's run) carry its `trace_id` and `span_id`.
  logger: (config) => pino({ level: config.logLevel, base: { service: "worker" }, ...traceLogOptions(config.tracing) }, pino.destination({ sync: false })),
  start(config, logger) {
    // A delivery's or job's span continues the trace stored on its document (docs/observability.md, "Tracing").
    const tracing = startTracing(config.tracing, (message) => logger.warn({ exporter: message }, "tracing: export problem"));
    return tracedProcess(tracing, async () => {
      const worker = await startWorker({
        mongoUri: config.mongoUri,
        databaseName: config.databaseName,
        logger,
        settings: config.settings,
        metricsPort: config.metricsPort,
      });
      logger.info({ worker: worker.workerId, metrics_port: worker.metricsPort }, "worker running");
      return worker;
    });
  },
});
