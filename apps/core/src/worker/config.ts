import { databaseName, logLevel, mongoUri, parseEnvironment, port, type LogLevel } from "@rms/config";
import { tracingConfig, type TracingConfig } from "@rms/telemetry";
import { z } from "zod";
import { settingsFrom, settingsVariables, type CoreSettings } from "../settings.js";

/** A worker's variables: the database and the shared settings; no gRPC, no tokens (it calls nothing). */
const schema = z.object({
  MONGODB_URI: mongoUri(),
  MONGODB_DATABASE: databaseName(),
  LOG_LEVEL: logLevel(),
  WORKER_METRICS_PORT: port(9466),
  RMS_SUPERVISED: z.string().optional(),
  ...settingsVariables,
});

export interface WorkerConfig {
  mongoUri: string;
  databaseName: string;
  logLevel: LogLevel;
  /** Operator port of the worker's `GET /metrics`, on 127.0.0.1 (0 picks a free one; logged at start). */
  metricsPort: number;
  /** Started by `npm start`: stdin is the launcher's pipe, and its end means shut down. */
  supervised: boolean;
  settings: CoreSettings;
  /** OpenTelemetry tracing (OTEL_* variables, @rms/telemetry): off unless an exporter is asked for. */
  tracing: TracingConfig;
}

/** Parses the environment once, at start-up. Nothing else in a worker reads process.env. */
export function parseWorkerConfig(env: Record<string, string | undefined>): WorkerConfig {
  const c = parseEnvironment(schema, env);
  return {
    mongoUri: c.MONGODB_URI,
    databaseName: c.MONGODB_DATABASE,
    logLevel: c.LOG_LEVEL,
    metricsPort: c.WORKER_METRICS_PORT,
    supervised: c.RMS_SUPERVISED === "1",
    settings: settingsFrom(c),
    tracing: tracingConfig(env, "rms-worker"),
  };
}
