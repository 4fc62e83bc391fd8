import { isIP } from "node:net";
import { coreTlsFilesFromEnv, type CoreTlsFiles } from "@rms/proto";
import { z } from "zod";

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
  /** Peers whose `X-Forwarded-Proto: https` is believed. */
  readonly trustedProxies: readonly string[];
  /** The gateway's own credential for core (RMS_GATEWAY_TOKEN), sent as `authorization: Bearer <token>`; never the admin token. */
  readonly coreToken: string;
  /** gRPC to core over TLS with this client certificate (CORE_TLS_*), or plaintext on loopback. */
  readonly coreTls: CoreTlsFiles | null;
  readonly logLevel: "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";
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
  /** Where rate-limit buckets live: this process, or MongoDB (shared by several gateways). */
  readonly rateLimitStore: "memory" | "mongodb";
  /** Operator port of `GET /metrics` (Prometheus), always on 127.0.0.1; 0 picks a free one. */
  readonly metricsPort: number;
}

/** A configuration problem; the message is one line naming the variable. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

const port = (fallback: number) =>
  z
    .string()
    .trim()
    .regex(/^\d{1,5}$/, "must be a port number from 0 to 65535")
    .transform(Number)
    .refine((n) => n <= 65535, "must be a port number from 0 to 65535")
    .default(fallback);

const optionalPositiveInt = z
  .string()
  .trim()
  .regex(/^[1-9]\d{0,8}$/, "must be a positive integer")
  .transform(Number)
  .optional();

const schema = z.object({
  PORT: port(8443),
  HTTP_PORT: port(8080),
  HOST: z.string().trim().min(1, "must not be empty").optional(),
  CORE_ADDR: z
    .string()
    .trim()
    .regex(/^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:.]+\]:\d{1,5}$/, "must be host:port")
    .default("127.0.0.1:50051"),
  TLS_CERT_FILE: z.string().trim().min(1, "must not be empty").optional(),
  TLS_KEY_FILE: z.string().trim().min(1, "must not be empty").optional(),
  TRUSTED_PROXIES: z
    .string()
    .default("")
    .transform((value) => value.split(",").map((ip) => ip.trim()).filter((ip) => ip !== ""))
    .refine((ips) => ips.every((ip) => isIP(ip) !== 0), "must be a comma-separated list of IP addresses"),
  RMS_GATEWAY_TOKEN: z.string({ error: "is required" }).min(1, "is required"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], "must be one of fatal, error, warn, info, debug, trace, silent").default("info"),
  DATA_DIR: z.string().trim().min(1, "must not be empty").default(".data"),
  SHUTDOWN_GRACE_MS: optionalPositiveInt,
  METRICS_PORT: port(9464),
  RATE_LIMIT_LIVE: optionalPositiveInt,
  RATE_LIMIT_TEST: optionalPositiveInt,
  RATE_LIMIT_ADDRESS: optionalPositiveInt,
  RATE_LIMIT_STORE: z.enum(["memory", "mongodb"], "must be memory or mongodb").default("memory"),
  MONGODB_URI: z
    .string({ error: "is required" })
    .trim()
    .regex(/^mongodb(\+srv)?:\/\/\S+$/, "must be a mongodb:// or mongodb+srv:// URI"),
  MONGODB_DATABASE: z
    .string()
    .trim()
    .regex(/^[^/\\. "$*<>:|?]{1,63}$/, "must be a MongoDB database name")
    .default("rms"),
});

/**
 * Validates the environment into a GatewayConfig. The only reader of the
 * environment is main.ts, which passes it here.
 */
export function parseGatewayConfig(env: Readonly<Record<string, string | undefined>>): GatewayConfig {
  // Treat empty strings as unset, as shells and launchers often pass them.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ""));
  const result = schema.safeParse(present);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new ConfigError(`${String(issue.path[0] ?? "environment")} ${issue.message}`.replace(/\s+/g, " "));
  }
  const c = result.data;
  if ((c.TLS_CERT_FILE === undefined) !== (c.TLS_KEY_FILE === undefined)) {
    throw new ConfigError(`${c.TLS_CERT_FILE === undefined ? "TLS_CERT_FILE" : "TLS_KEY_FILE"} is required when ${c.TLS_CERT_FILE === undefined ? "TLS_KEY_FILE" : "TLS_CERT_FILE"} is set`);
  }
  let coreTls: CoreTlsFiles | null;
  try {
    coreTls = coreTlsFilesFromEnv(present);
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
    metricsPort: c.METRICS_PORT,
  };
}
