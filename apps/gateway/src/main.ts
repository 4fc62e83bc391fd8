#!/usr/bin/env node
// The gateway process: the only place that reads the environment.
import { runProcess } from "@rms/config";
import { pino } from "pino";
import { parseGatewayConfig } from "./config.js";
import { startGateway } from "./server.js";

void runProcess({
  name: "gateway",
  config: parseGatewayConfig,
  // Asynchronous writes: a synchronous write per log line was a tenth of this process's CPU under load
  // (docs/performance.md); lines still go out as soon as the previous write finishes, and pino flushes at exit.
  logger: (config) => pino({ level: config.logLevel, base: { service: "gateway" } }, pino.destination({ sync: false })),
  // Its stop finishes the requests in flight (within SHUTDOWN_GRACE_MS).
  start: (config, logger) => startGateway(config, { logger }),
});
