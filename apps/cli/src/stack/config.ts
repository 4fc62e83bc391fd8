import { tracingConfig } from "@rms/telemetry";
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
} from "@rms/config";
import { settingsVariables } from "@rms/core/settings";
import { z } from "zod";
import { DEFAULT_SEMI_SPACE_MB, DEFAULT_WORKER_HEAP_MB } from "./heap.js";

/**
 * Every variable `npm start` reads or hands to core and gateway (CONTRACT.md section 9, in ../shared/docs/), checked before anything
 * starts by the same rules (@rms/config) core and gateway check them with.
 */
const schema = z
  .object({
    MONGODB_URI: mongoUri().optional(),
    MONGODB_DATABASE: databaseName().optional(),
    PORT: port(8443),
    HTTP_PORT: port(8080),
    HOST: z.string().trim().min(1, "must not be empty").optional(),
    CORE_ADDR: address("127.0.0.1:50051"),
    METRICS_PORT: port(9464),
    CORE_METRICS_PORT: port(9465),
    /** The first worker's metrics port; worker n gets this + n - 1 (0: each picks a free one). */
    WORKER_METRICS_PORT: port(9466),
    TLS_CERT_FILE: filePath().optional(),
    TLS_KEY_FILE: filePath().optional(),
    TRUSTED_PROXIES: ipList(),
    PROXY_PROTOCOL_PEERS: ipList(),
    RMS_ADMIN_TOKEN: token().optional(),
    RMS_GATEWAY_TOKEN: token().optional(),
    CORE_TLS_CERT_FILE: filePath().optional(),
    CORE_TLS_KEY_FILE: filePath().optional(),
    CORE_TLS_CA_FILE: filePath().optional(),
    RATE_LIMIT_LIVE: positiveInt().optional(),
    RATE_LIMIT_TEST: positiveInt().optional(),
    RATE_LIMIT_ADDRESS: positiveInt().optional(),
    RATE_LIMIT_STORE: rateLimitStore(),
    MAX_CONNECTIONS_PER_ADDRESS: positiveInt().optional(),
    REQUEST_LOGS: z.enum(["on", "off"]).optional(),
    REQUEST_LOGS_BUFFER: positiveInt().optional(),
    REQUEST_LOGS_RETENTION_DAYS: positiveInt().optional(),
    FILES_MAX_BYTES: positiveInt().optional(),
    SHUTDOWN_GRACE_MS: positiveInt().optional(),
    /** The dashboard's build the gateway serves (default: apps/dashboard/dist beside the gateway). */
    DASHBOARD_DIR: filePath().optional(),
    RMS_FAULTS: z.string().optional(),
    LOG_LEVEL: logLevel(),
    WORKERS: z
      .string()
      .trim()
      .regex(/^\d{1,2}$/, "must be a whole number from 0 to 64")
      .transform(Number)
      .refine((n) => n <= 64, "must be a whole number from 0 to 64")
      .default(1),
    /** Each worker's old generation in MiB (heap.ts); 0: V8's own sizing. */
    WORKER_HEAP_MB: z
      .string()
      .trim()
      .regex(/^\d{1,5}$/, "must be a whole number of MiB from 0 to 65536 (0: no cap)")
      .transform(Number)
      .refine((n) => n === 0 || (n >= 64 && n <= 65_536), "must be 0 (no cap) or a whole number of MiB from 64 to 65536")
      .default(DEFAULT_WORKER_HEAP_MB),
    /** Gateway's and core's young generation: each semi-space in MiB (heap.ts); 0: V8's own sizing. */
    SEMI_SPACE_MB: z
      .string()
      .trim()
      .regex(/^\d{1,3}$/, "must be a whole number of MiB from 0 to 256 (0: V8's own sizing)")
      .transform(Number)
      .refine((n) => n <= 256, "must be a whole number of MiB from 0 to 256 (0: V8's own sizing)")
      .default(DEFAULT_SEMI_SPACE_MB),
    ...settingsVariables,
  })
  .superRefine((c, ctx) => {
    if (!!c.TLS_CERT_FILE !== !!c.TLS_KEY_FILE) {
      ctx.addIssue({ code: "custom", path: [c.TLS_CERT_FILE ? "TLS_KEY_FILE" : "TLS_CERT_FILE"], message: "must be set together with the other TLS file" });
    }
    if (c.WORKER_METRICS_PORT !== 0 && c.WORKERS > 0) {
      const last = c.WORKER_METRICS_PORT + c.WORKERS - 1;
      if (last > 65535)
        ctx.addIssue({
          code: "custom",
          path: ["WORKER_METRICS_PORT"],
          message: `leaves no port for worker ${c.WORKERS} (the workers take ${c.WORKERS} ports from it)`,
        });
      // The other listeners of the stack must not fall in the workers' range: the second one to bind would fail.
      for (const name of ["PORT", "HTTP_PORT", "METRICS_PORT", "CORE_METRICS_PORT"] as const) {
        const taken = c[name];
        if (taken >= c.WORKER_METRICS_PORT && taken <= last) {
          ctx.addIssue({
            code: "custom",
            path: ["WORKER_METRICS_PORT"],
            message: `gives worker ${taken - c.WORKER_METRICS_PORT + 1} port ${taken}, which ${name} uses`,
          });
        }
      }
    }
    const coreTls = ["CORE_TLS_CERT_FILE", "CORE_TLS_KEY_FILE", "CORE_TLS_CA_FILE"] as const;
    const missing = coreTls.find((name) => !c[name]);
    if (missing && coreTls.some((name) => c[name])) {
      ctx.addIssue({ code: "custom", path: [missing], message: "must be set together with the other CORE_TLS_ files" });
    }
  });

export type StackConfig = z.infer<typeof schema>;

export { ConfigError as StackConfigError };

export function parseStackConfig(env: Record<string, string | undefined>): StackConfig {
  const config = parseEnvironment(schema, env);
  // The children read the OTEL_* variables themselves (child-env.ts); a bad one stops the launcher before anything starts.
  tracingConfig(env, "rms");
  return config;
}
