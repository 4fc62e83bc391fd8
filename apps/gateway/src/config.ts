import type { StreamLimits } from "./streams/connection.js";
import {
  address,
  ConfigError,
  databaseName,
  filePath,
  ipList,
  logLevel,
  mongoUri,
  parseEnvironment,
  port,
  positiveInt,
  rateLimitStore,
  token,
  type LogLevel,
} from "@rms/config";
import { coreTlsFilesFromEnv, type CoreTlsFiles } from "@rms/proto";
import { tracingConfig, type TracingConfig } from "@rms/telemetry";
import { fileURLToPath } from "node:url";
import { z } from "zod";

export { ConfigError };

/** CONTRACT.md section 8: at most 256 open connections per client address. */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;

/** CONTRACT.md section 12: at most 10,000 request logs waiting in memory per gateway, kept 14 days. */
export const DEFAULT_REQUEST_LOGS = { enabled: true, buffer: 10_000, retentionDays: 14 } as const;

/** The gateway's settings, parsed once from the environment by `parseGatewayConfig`. */
export interface GatewayConfig {
  /** HTTPS port; 0 picks a free one. */
  readonly port: number;
  /** Plain-HTTP rejecting listener; null disables it, 0 picks a free port. */
  readonly httpPort: number | null;
  /** Interface to listen on; undefined means all. */
  readonly host: string | undefined;
  /** Core gRPC address, host:port. */
  readonly coreAddr: string;
  /** Certificate and key files, or null for the development certificate under `dataDir/tls`. */
  readonly tls: { readonly certFile: string; readonly keyFile: string } | null;
  /** Peers whose `X-Forwarded-Proto: https` and `X-Forwarded-For` are believed, and whose PROXY protocol header names the client. */
  readonly trustedProxies: readonly string[];
  /** PROXY_PROTOCOL_PEERS: peers whose PROXY protocol header (v1, v2) names the client; apart from TRUSTED_PROXIES (CONTRACT.md section 8). */
  readonly proxyProtocolPeers: readonly string[];
  /** The gateway's own credential for core (RMS_GATEWAY_TOKEN), sent as `authorization: Bearer <token>`; never the admin token. */
  readonly coreToken: string;
  /** gRPC to core over TLS with this client certificate (CORE_TLS_*), or plaintext on loopback. */
  readonly coreTls: CoreTlsFiles | null;
  readonly logLevel: LogLevel;
  /** Where the development certificate is kept (`<dataDir>/tls/`). */
  readonly dataDir: string;
  /** Upper bound for finishing in-flight requests on shutdown. */
  readonly shutdownGraceMs: number;
  /** MongoDB for the gateway's own records (idempotency keys, shared rate limits). */
  readonly mongoUri: string;
  readonly mongoDatabase: string;
  /** Requests per second per API key, by mode. */
  readonly rateLimits: { readonly live: number; readonly test: number };
  /** Requests per second per client address before a key is verified (what random keys could make core look up). */
  readonly addressRateLimit: number;
  /** Open connections one client address may hold on the listeners (trusted proxies exempt); further ones are closed at once. */
  readonly maxConnectionsPerAddress: number;
  /** Where rate-limit buckets live: this process, or MongoDB (shared by several gateways). */
  readonly rateLimitStore: "memory" | "mongodb";
  /** Operator port of `GET /metrics` (Prometheus), always on 127.0.0.1; 0 picks a free one. */
  readonly metricsPort: number;
  /** Started by `npm start` (RMS_SUPERVISED=1): stdin is the launcher's pipe, and its end means shut down. */
  readonly supervised?: boolean;
  /**
   * Request logs (CONTRACT.md section 12): recorded unless REQUEST_LOGS=off (the bench's comparison), at most
   * `buffer` waiting in memory (REQUEST_LOGS_BUFFER, 10,000), kept `retentionDays` (REQUEST_LOGS_RETENTION_DAYS,
   * 14). Absent: the defaults.
   */
  readonly requestLogs?: { readonly enabled: boolean; readonly buffer: number; readonly retentionDays: number };
  /** OpenTelemetry tracing (OTEL_* variables, @rms/telemetry): off unless an exporter is asked for; absent is off. */
  readonly tracing?: TracingConfig;
  /** Most bytes of a file uploaded by `POST /v1/files` (FILES_MAX_BYTES, default 512 MiB); absent is the default. */
  readonly filesMaxBytes?: number;
  /** The dashboard's built files (DASHBOARD_DIR; default apps/dashboard/dist beside this package), served at `/dashboard/`. */
  readonly dashboardDir?: string;
  /** The streams' limits (docs/streams.md) over DEFAULT_STREAM_LIMITS (tests shorten them; no variable sets them). */
  readonly streams?: Partial<StreamLimits>;
}

/** FILES_MAX_BYTES's default: 512 MiB (CONTRACT.md section 11). */
export const DEFAULT_FILES_MAX_BYTES = 512 * 1024 * 1024;

/** apps/dashboard/dist, from this file's place in apps/gateway/dist (or src). */
export const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL("../../dashboard/dist", import.meta.url));

/** The gateway's variables, by the shared rules of @rms/config (core and the launcher check the same ones alike). */
const schema = z.object({
  PORT: port(8443),
  HTTP_PORT: port(8080),
  HOST: z.string().trim().min(1, "must not be empty").optional(),
  CORE_ADDR: address("127.0.0.1:50051"),
  TLS_CERT_FILE: filePath().optional(),
  TLS_KEY_FILE: filePath().optional(),
  TRUSTED_PROXIES: ipList(),
  PROXY_PROTOCOL_PEERS: ipList(),
  RMS_GATEWAY_TOKEN: token(),
  LOG_LEVEL: logLevel(),
  DATA_DIR: z.string().trim().min(1, "must not be empty").default(".data"),
  SHUTDOWN_GRACE_MS: positiveInt().optional(),
  METRICS_PORT: port(9464),
  RATE_LIMIT_LIVE: positiveInt().optional(),
  RATE_LIMIT_TEST: positiveInt().optional(),
  RATE_LIMIT_ADDRESS: positiveInt().optional(),
  RATE_LIMIT_STORE: rateLimitStore(),
  MAX_CONNECTIONS_PER_ADDRESS: positiveInt().optional(),
  REQUEST_LOGS: z.enum(["on", "off"]).default("on"),
  REQUEST_LOGS_BUFFER: positiveInt().optional(),
  REQUEST_LOGS_RETENTION_DAYS: positiveInt().optional(),
  MONGODB_URI: mongoUri(),
  MONGODB_DATABASE: databaseName(),
  RMS_SUPERVISED: z.string().optional(),
  FILES_MAX_BYTES: positiveInt().optional(),
  DASHBOARD_DIR: z.string().trim().min(1, "must not be empty").optional(),
});

/**
 * Validates the environment into a GatewayConfig. The only reader of the
 * environment is main.ts, which passes it here.
 */
export function parseGatewayConfig(env: Readonly<Record<string, string | undefined>>): GatewayConfig {
  const c = parseEnvironment(schema, env);
  if ((c.TLS_CERT_FILE === undefined) !== (c.TLS_KEY_FILE === undefined)) {
    throw new ConfigError(
      `${c.TLS_CERT_FILE === undefined ? "TLS_CERT_FILE" : "TLS_KEY_FILE"} is required when ` +
        `${c.TLS_CERT_FILE === undefined ? "TLS_KEY_FILE" : "TLS_CERT_FILE"} is set`,
    );
  }
  let coreTls: CoreTlsFiles | null;
  try {
    coreTls = coreTlsFilesFromEnv(env);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  return {
    port: c.PORT,
    httpPort: c.HTTP_PORT === 0 ? null : c.HTTP_PORT,
    host: c.HOST,
    coreAddr: c.CORE_ADDR,
    tls: c.TLS_CERT_FILE !== undefined && c.TLS_KEY_FILE !== undefined ? { certFile: c.TLS_CERT_FILE, keyFile: c.TLS_KEY_FILE } : null,
    trustedProxies: c.TRUSTED_PROXIES,
    proxyProtocolPeers: c.PROXY_PROTOCOL_PEERS,
    coreToken: c.RMS_GATEWAY_TOKEN,
    coreTls,
    logLevel: c.LOG_LEVEL,
    dataDir: c.DATA_DIR,
    shutdownGraceMs: c.SHUTDOWN_GRACE_MS ?? 10_000,
    mongoUri: c.MONGODB_URI,
    mongoDatabase: c.MONGODB_DATABASE,
    rateLimits: { live: c.RATE_LIMIT_LIVE ?? 100, test: c.RATE_LIMIT_TEST ?? 25 },
    addressRateLimit: c.RATE_LIMIT_ADDRESS ?? 500,
    rateLimitStore: c.RATE_LIMIT_STORE,
    maxConnectionsPerAddress: c.MAX_CONNECTIONS_PER_ADDRESS ?? DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    metricsPort: c.METRICS_PORT,
    requestLogs: {
      enabled: c.REQUEST_LOGS === "on",
      buffer: c.REQUEST_LOGS_BUFFER ?? DEFAULT_REQUEST_LOGS.buffer,
      retentionDays: c.REQUEST_LOGS_RETENTION_DAYS ?? DEFAULT_REQUEST_LOGS.retentionDays,
    },
    supervised: c.RMS_SUPERVISED === "1",
    tracing: tracingConfig(env, "rms-gateway"),
    filesMaxBytes: c.FILES_MAX_BYTES ?? DEFAULT_FILES_MAX_BYTES,
    dashboardDir: c.DASHBOARD_DIR ?? DEFAULT_DASHBOARD_DIR,
  };
}
