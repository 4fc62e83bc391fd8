#!/usr/bin/env node
// The gateway process: the only place that reads the environment.
import { pino } from "pino";
import { ConfigError, parseGatewayConfig, type GatewayConfig } from "./config.js";
import { startGateway } from "./server.js";

let config: GatewayConfig;
try {
  config = parseGatewayConfig(process.env);
} catch (error) {
  if (error instanceof ConfigError) {
    process.stderr.write(`gateway: ${error.message}\n`);
    process.exit(2);
  }
  throw error;
}

// Asynchronous writes: a synchronous write per log line was a tenth of this process's CPU under load
// (docs/performance.md); lines still go out as soon as the previous write finishes, and pino flushes at exit.
const logger = pino({ level: config.logLevel, base: { service: "gateway" } }, pino.destination({ sync: false }));
try {
  const gateway = await startGateway(config, { logger });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "stopping: finishing in-flight requests");
    void gateway.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => shutdown(signal));
  // Under `npm start` our stdin is a pipe from the launcher: its end means the launcher is gone.
  if (config.supervised) process.stdin.on("end", () => shutdown("launcher gone")).resume();
} catch (error) {
  logger.fatal({ err: error }, "gateway failed to start");
  process.exit(1);
}
