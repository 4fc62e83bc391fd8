import { address, ConfigError, databaseName, isLoopbackAddress, logLevel, mongoUri, parseEnvironment, port, token, type LogLevel } from "@rms/config";
import { coreTlsFilesFromEnv, type CoreTlsFiles } from "@rms/proto";
import { tracingConfig, type TracingConfig } from "@rms/telemetry";
import { z } from "zod";
import { parseFaults, type Faults } from "./faults.js";
import { settingsFrom, settingsVariables, type CoreSettings } from "./settings.js";

export { ConfigError, isLoopbackAddress };

/** Core's variables, by the shared rules of @rms/config (the gateway and the launcher check the same ones alike). */
const schema = z.object({
  MONGODB_URI: mongoUri(),
  MONGODB_DATABASE: databaseName(),
  CORE_ADDR: address("127.0.0.1:50051"),
  RMS_ADMIN_TOKEN: token(),
  RMS_GATEWAY_TOKEN: token().optional(),
  RMS_FAULTS: z.string().optional(),
  CORE_METRICS_PORT: port(9465),
  LOG_LEVEL: logLevel(),
  RMS_SUPERVISED: z.string().optional(),
  ...settingsVariables,
});

export type CoreConfig = {
  mongoUri: string;
  databaseName: string;
  address: string;
  adminToken: string;
  /** The gateway's own token (grpc/permissions.ts); no gateway can call when unset. */
  gatewayToken: string | undefined;
  /** gRPC over TLS with client certificates; required off loopback. */
  tls: CoreTlsFiles | null;
  logLevel: LogLevel;
  faults: Faults;
  /** Operator port of core's `GET /metrics`, on 127.0.0.1. */
  metricsPort: number;
  /** Started by `npm start` (RMS_SUPERVISED=1): stdin is the launcher's pipe, and its end means shut down. */
  supervised: boolean;
  settings: CoreSettings;
  /** OpenTelemetry tracing (OTEL_* variables, @rms/telemetry): off unless an exporter is asked for. */
  tracing: TracingConfig;
};

/** Parses the environment once, at start-up. Nothing else reads process.env. */
export function parseCoreConfig(env: Record<string, string | undefined>): CoreConfig {
  const c = parseEnvironment(schema, env);
  let faults: Faults;
  try {
    faults = parseFaults(c.RMS_FAULTS);
  } catch (error) {
    throw new ConfigError(`RMS_FAULTS ${(error as Error).message}`);
  }
  if (c.RMS_GATEWAY_TOKEN !== undefined && c.RMS_GATEWAY_TOKEN === c.RMS_ADMIN_TOKEN) {
    throw new ConfigError("RMS_GATEWAY_TOKEN must differ from RMS_ADMIN_TOKEN (the gateway gets a credential of its own)");
  }
  let tls: CoreTlsFiles | null;
  try {
    // The CA file here is the one that signs the clients' certificates (the gateway's, rms's).
    tls = coreTlsFilesFromEnv(env);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  if (!tls && !isLoopbackAddress(c.CORE_ADDR)) {
    throw new ConfigError(
      `CORE_ADDR ${c.CORE_ADDR} is not a loopback address: set CORE_TLS_CERT_FILE, CORE_TLS_KEY_FILE and CORE_TLS_CA_FILE to serve gRPC over TLS with client certificates`,
    );
  }
  return {
    mongoUri: c.MONGODB_URI,
    databaseName: c.MONGODB_DATABASE,
    address: c.CORE_ADDR,
    adminToken: c.RMS_ADMIN_TOKEN,
    gatewayToken: c.RMS_GATEWAY_TOKEN,
    tls,
    logLevel: c.LOG_LEVEL,
    faults,
    metricsPort: c.CORE_METRICS_PORT,
    supervised: c.RMS_SUPERVISED === "1",
    settings: settingsFrom(c),
    tracing: tracingConfig(env, "rms-core"),
  };
}
