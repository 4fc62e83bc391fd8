import { coreTlsFilesFromEnv, type CoreTlsFiles } from "@rms/proto";
import { z } from "zod";
import { parseFaults, type Faults } from "./faults.js";

const schema = z.object({
  MONGODB_URI: z.string().regex(/^mongodb(\+srv)?:\/\//, "must be a mongodb:// or mongodb+srv:// URI"),
  MONGODB_DATABASE: z.string().regex(/^[A-Za-z0-9_-]{1,63}$/, "must be 1-63 letters, digits, _ or -").default("rms"),
  CORE_ADDR: z.string().regex(/^[^\s:]+:\d{1,5}$/, "must be host:port").default("127.0.0.1:50051"),
  RMS_ADMIN_TOKEN: z.string().min(16, "must be at least 16 characters"),
  RMS_GATEWAY_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  RMS_FAULTS: z.string().optional(),
  KEY_CACHE_MS: z.coerce.number({ message: "must be a number of milliseconds" }).int("must be a number of milliseconds").min(0, "must be a number of milliseconds").max(300_000, "must be at most 300000").default(0),
  CORE_METRICS_PORT: z.coerce.number({ message: "must be a port number" }).int("must be a port number").min(0, "must be a port number").max(65535, "must be a port number").default(9465),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
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
  logLevel: z.infer<typeof schema>["LOG_LEVEL"];
  faults: Faults;
  /** Operator port of core's `GET /metrics`, on 127.0.0.1. */
  metricsPort: number;
  /** Verified-key cache lifetime; 0 (default) disables it. Safe only with one core process. */
  keyCacheMs: number;
};

/** True for 127.0.0.0/8, ::1 and localhost: the only addresses core serves plaintext gRPC on. */
export function isLoopbackAddress(address: string): boolean {
  const host = address.replace(/:\d+$/, "").replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** A configuration error: its message is one line naming the variable. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Parses the environment once, at start-up. Nothing else reads process.env. */
export function parseCoreConfig(env: Record<string, string | undefined>): CoreConfig {
  const result = schema.safeParse(env);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const variable = String(issue.path[0] ?? "environment");
    const message = issue.code === "invalid_type" && env[variable] === undefined ? "is required" : issue.message;
    throw new ConfigError(`${variable} ${message}`);
  }
  const c = result.data;
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
    throw new ConfigError(`CORE_ADDR ${c.CORE_ADDR} is not a loopback address: set CORE_TLS_CERT_FILE, CORE_TLS_KEY_FILE and CORE_TLS_CA_FILE to serve gRPC over TLS with client certificates`);
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
    keyCacheMs: c.KEY_CACHE_MS,
  };
}
