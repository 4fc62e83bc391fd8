#!/usr/bin/env node
// The gateway process: the only place that reads the environment.
import { runProcess } from "@rms/config";
import { startTracing, tracedProcess, traceLogOptions, tracingConfig } from "@rms/telemetry";
import { pino } from "pino";
import { parseGatewayConfig, type GatewayConfig } from "./config.js";
import { startGateway } from "./server.js";

/** Tracing as the environment asked for it (parseGatewayConfig always says; a config made by hand may not: off). */
const tracingOf = (config: GatewayConfig) => config.tracing ?? tracingConfig({}, "rms-gateway");

void runProcess({
  name: "gateway",
  config: parseGatewayConfig,
  // Asynchronous writes: a synchronous write per log line costs a tenth of this process's CPU under load
  // (docs/performance.md); lines still go out as soon as the previous write finishes, and pino flushes at exit.
  // Lines written inside a request's span carry its `trace_id` and `span_id` (docs/observability.md, "Tracing").
  logger: (config) => pino({ level: config.logLevel, base: { service: "gateway" }, ...traceLogOptions(tracingOf(config)) }, pino.destination({ sync: false })),
  // Its stop finishes the requests in flight (within SHUTDOWN_GRACE_MS), then exports the last spans.
  start(config, logger) {
    const tracing = startTracing(tracingOf(config), (message) => logger.warn({ exporter: message }, "tracing: export problem"));
    return tracedProcess(tracing, () => startGateway(config, { logger }));
  },
});
