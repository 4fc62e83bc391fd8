#!/usr/bin/env node
// Entry point of the core process: hands the environment to config.ts, the only reader of its variables.
import { readFileSync } from "node:fs";
import { pino } from "pino";
import { ConfigError, parseCoreConfig } from "./config.js";
import { startCore } from "./server.js";

async function main(): Promise<void> {
  let config: ReturnType<typeof parseCoreConfig>;
  try {
    config = parseCoreConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`rms-core: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  // Asynchronous writes: a synchronous write per log line was a tenth of this process's CPU under load
  // (docs/performance.md); lines still go out as soon as the previous write finishes, and pino flushes at exit.
  const logger = pino({ level: config.logLevel, base: { service: "core" } }, pino.destination({ sync: false }));
  const tls = config.tls && { cert: readFileSync(config.tls.certFile), key: readFileSync(config.tls.keyFile), ca: readFileSync(config.tls.caFile) };
  const core = await startCore({
    mongoUri: config.mongoUri,
    databaseName: config.databaseName,
    address: config.address,
    adminToken: config.adminToken,
    ...(config.gatewayToken ? { gatewayToken: config.gatewayToken } : {}),
    ...(tls ? { tls } : {}),
    logger,
    faults: config.faults,
    metricsPort: config.metricsPort,
    settings: config.settings,
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "core stopping");
    core.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "core stop failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
  // Under `npm start` our stdin is a pipe from the launcher: its end means the launcher is gone.
  if (config.supervised) process.stdin.on("end", () => shutdown("launcher gone")).resume();
}

main().catch((error: unknown) => {
  process.stderr.write(`rms-core: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
