import { address, ConfigError, databaseName, filePath, isLoopbackAddress, logLevel, mongoUri, parseEnvironment, port, token, type LogLevel } from "@rms/config";
import { coreTlsFilesFromEnv, type CoreTlsFiles } from "@rms/proto";
import { tracingConfig, type TracingConfig } from "@rms/telemetry";
import { z } from "zod";
import { builtInClients } from "./clients/built-in.js";
import type { CredentialedClient } from "./clients/client.js";
import { ClientsFileError, readClientsFile } from "./clients/file.js";
import { CallerTable } from "./clients/table.js";
import { METHOD_CALLERS, SERVED_METHODS } from "./domains.js";
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
  CORE_CLIENTS_FILE: filePath().optional(),
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
  /** The gateway's own token (the built-in `gateway` client); no gateway can call when unset. */
  gatewayToken: string | undefined;
  /** CORE_CLIENTS_FILE and the caller-table entries it held at start (clients/file.ts); null when unset. */
  clients: { file: string; entries: CredentialedClient[] } | null;
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
      `CORE_ADDR ${c.CORE_ADDR} is not a loopback address: set CORE_TLS_CERT_FILE, CORE_TLS_KEY_FILE and CORE_TLS_CA_FILE to serve gRPC over TLS with ` +
        `client certificates`,
    );
  }
  return {
    mongoUri: c.MONGODB_URI,
    databaseName: c.MONGODB_DATABASE,
    address: c.CORE_ADDR,
    adminToken: c.RMS_ADMIN_TOKEN,
    gatewayToken: c.RMS_GATEWAY_TOKEN,
    clients: c.CORE_CLIENTS_FILE === undefined ? null : clientsAtStart(c.CORE_CLIENTS_FILE, c.RMS_ADMIN_TOKEN, c.RMS_GATEWAY_TOKEN),
    tls,
    logLevel: c.LOG_LEVEL,
    faults,
    metricsPort: c.CORE_METRICS_PORT,
    supervised: c.RMS_SUPERVISED === "1",
    settings: settingsFrom(c),
    tracing: tracingConfig(env, "rms-core"),
  };
}

/** The clients file as core starts with it: read and checked whole, against the built-in entries too (no shared token). */
function clientsAtStart(file: string, adminToken: string, gatewayToken: string | undefined): { file: string; entries: CredentialedClient[] } {
  try {
    const entries = readClientsFile(file, SERVED_METHODS);
    try {
      new CallerTable(builtInClients({ operator: adminToken, gateway: gatewayToken }, METHOD_CALLERS), entries);
    } catch (error) {
      throw new ClientsFileError(`${file}: ${(error as Error).message}`);
    }
    return { file, entries };
  } catch (error) {
    if (error instanceof ClientsFileError) throw new ConfigError(`CORE_CLIENTS_FILE ${error.message}`);
    throw error;
  }
}
