#!/usr/bin/env node
// Entry point of the core process: hands the environment to config.ts, the only reader of its variables.
import { readFileSync } from "node:fs";
import { runProcess } from "@rms/config";
import { startTracing, tracedProcess, traceLogOptions } from "@rms/telemetry";
import { pino } from "pino";
import { parseCoreConfig } from "./config.js";
import { startCore, type RunningCore } from "./server.js";

void runProcess({
  name: "rms-core",
  config: parseCoreConfig,
  // Asynchronous writes: a synchronous write per log line costs a tenth of this process's CPU under load
  // (docs/performance.md); lines still go out as soon as the previous write finishes, and pino flushes at exit.
  // Lines written inside a span carry its `trace_id` and `span_id` (docs/observability.md, "Tracing").
  logger: (config) => pino({ level: config.logLevel, base: { service: "core" }, ...traceLogOptions(config.tracing) }, pino.destination({ sync: false })),
  start(config, logger) {
    const tls = config.tls && { cert: readFileSync(config.tls.certFile), key: readFileSync(config.tls.keyFile), ca: readFileSync(config.tls.caFile) };
    // Before serving, so every call is traced; stopped last, so the spans of the last calls are exported.
    const tracing = startTracing(config.tracing, (message) => logger.warn({ exporter: message }, "tracing: export problem"));
    // SIGHUP reads CORE_CLIENTS_FILE again (docs/internal-clients.md); taken from the start, so it never ends the process.
    let running: RunningCore | undefined;
    process.on("SIGHUP", () => {
      if (running) running.reloadClients();
      else logger.warn({ signal: "SIGHUP" }, "clients: core is still starting; send SIGHUP again once it listens");
    });
    return tracedProcess(tracing, async () => {
      running = await startCore({
        mongoUri: config.mongoUri,
        databaseName: config.databaseName,
        address: config.address,
        adminToken: config.adminToken,
        ...(config.gatewayToken ? { gatewayToken: config.gatewayToken } : {}),
        ...(config.clients ? { clients: config.clients } : {}),
        ...(tls ? { tls } : {}),
        logger,
        faults: config.faults,
        metricsPort: config.metricsPort,
        settings: config.settings,
      });
      return running;
    });
  },
});
