import type { CoreTlsFiles } from "@rms/proto";
import type { StackConfig } from "./config.js";

/** What any Node.js process may need from the launcher's environment, whatever it is: nothing of ours. */
const PROCESS_BASICS = ["PATH", "HOME", "TMPDIR", "TZ", "LANG", "LC_ALL", "NODE_OPTIONS"] as const;

/** What the launcher resolved before starting its children. */
export interface Resolved {
  readonly mongoUri: string;
  readonly adminToken: string;
  readonly gatewayToken: string;
  readonly coreTls: CoreTlsFiles | null;
  readonly dataDir: string;
  /** Seals webhook secrets at rest: RMS_SECRET_KEY, or the development key. */
  readonly secretKey: string;
  /** Core's CORE_CLIENTS_FILE: the one given, or the development one in the data directory. */
  readonly clientsFile?: string;
}

/** Variables set in the config, as strings (unset ones are left out). */
function pick<Name extends keyof StackConfig>(config: StackConfig, names: readonly Name[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => (config[name] === undefined ? [] : [[name, String(config[name])]])));
}

function basics(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return { ...Object.fromEntries(PROCESS_BASICS.flatMap((name) => (env[name] ? [[name, env[name]]] : []))), ...otel(env) };
}

/**
 * The standard OpenTelemetry variables (tracing: exporter, endpoint, headers, sampler, resource attributes), to every
 * child alike; not OTEL_SERVICE_NAME, which would give the three processes one name: each names itself
 * (`rms-gateway`, `rms-core`, `rms-worker`).
 */
function otel(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[0].startsWith("OTEL_") && entry[0] !== "OTEL_SERVICE_NAME" && !!entry[1]),
  );
}

function shared(config: StackConfig, resolved: Resolved): Record<string, string> {
  const tls = resolved.coreTls;
  return {
    ...pick(config, ["CORE_ADDR", "LOG_LEVEL", "MONGODB_DATABASE"]),
    // Core and gateway keep their records in the same database.
    MONGODB_URI: resolved.mongoUri,
    RMS_GATEWAY_TOKEN: resolved.gatewayToken,
    // Read by neither child: it names the stack a process belongs to (ps, /proc, the launcher's tests).
    RMS_DATA_DIR: resolved.dataDir,
    // Core and gateway share the CORE_TLS_ files here (one certificate for both ends in development).
    ...(tls ? { CORE_TLS_CERT_FILE: tls.certFile, CORE_TLS_KEY_FILE: tls.keyFile, CORE_TLS_CA_FILE: tls.caFile } : {}),
  };
}

/** The behaviour settings core and workers share (core's settings.ts), as the operator wrote them; validated already. */
const SETTINGS = [
  "WEBHOOK_ALLOW_PRIVATE",
  "WEBHOOK_RETRY_SCHEDULE",
  "WEBHOOK_ENDPOINT_CONCURRENCY",
  "JOBS_PER_ACCOUNT",
  "JOBS_QUEUED_PER_ACCOUNT",
  "JOBS_LEASE_MS",
  "FILES_WRITE_LEASE_MS",
  "FILES_SWEEP_INTERVAL_MS",
  "FILES_QUOTA_BYTES",
] as const;

function settings(env: Readonly<Record<string, string | undefined>>, resolved: Resolved): Record<string, string> {
  return { ...Object.fromEntries(SETTINGS.flatMap((name) => (env[name] ? [[name, env[name]]] : []))), RMS_SECRET_KEY: resolved.secretKey };
}

/** Core's whole environment: its variables and nothing else of the launcher's. */
export function coreEnv(env: Readonly<Record<string, string | undefined>>, config: StackConfig, resolved: Resolved): Record<string, string> {
  return {
    ...basics(env),
    ...shared(config, resolved),
    ...pick(config, ["CORE_METRICS_PORT", "RMS_FAULTS"]),
    ...settings(env, resolved),
    RMS_ADMIN_TOKEN: resolved.adminToken,
    ...(resolved.clientsFile ? { CORE_CLIENTS_FILE: resolved.clientsFile } : {}),
  };
}

/**
 * Worker `n`'s (from 1) whole environment: the database, the settings and its own metrics port (the base
 * plus n - 1, or 0 for a free one); no token of any kind (it calls nothing).
 */
export function workerEnv(env: Readonly<Record<string, string | undefined>>, config: StackConfig, resolved: Resolved, n: number): Record<string, string> {
  return {
    ...basics(env),
    ...pick(config, ["LOG_LEVEL", "MONGODB_DATABASE"]),
    WORKER_METRICS_PORT: String(config.WORKER_METRICS_PORT === 0 ? 0 : config.WORKER_METRICS_PORT + n - 1),
    MONGODB_URI: resolved.mongoUri,
    RMS_DATA_DIR: resolved.dataDir,
    ...settings(env, resolved),
  };
}

/** The gateway's whole environment; least privilege: never the admin token, even when the operator exported it. */
export function gatewayEnv(env: Readonly<Record<string, string | undefined>>, config: StackConfig, resolved: Resolved): Record<string, string> {
  const trustedProxies: Record<string, string> = {
    ...(config.TRUSTED_PROXIES.length > 0 ? { TRUSTED_PROXIES: config.TRUSTED_PROXIES.join(",") } : {}),
    ...(config.PROXY_PROTOCOL_PEERS.length > 0 ? { PROXY_PROTOCOL_PEERS: config.PROXY_PROTOCOL_PEERS.join(",") } : {}),
  };
  return {
    ...basics(env),
    ...shared(config, resolved),
    ...pick(config, [
      "PORT",
      "HTTP_PORT",
      "HOST",
      "METRICS_PORT",
      "TLS_CERT_FILE",
      "TLS_KEY_FILE",
      "RATE_LIMIT_LIVE",
      "RATE_LIMIT_TEST",
      "RATE_LIMIT_ADDRESS",
      "RATE_LIMIT_STORE",
      "MAX_CONNECTIONS_PER_ADDRESS",
      "REQUEST_LOGS",
      "REQUEST_LOGS_BUFFER",
      "REQUEST_LOGS_RETENTION_DAYS",
      "FILES_MAX_BYTES",
      "SHUTDOWN_GRACE_MS",
      "DASHBOARD_DIR",
    ]),
    ...trustedProxies,
    DATA_DIR: resolved.dataDir,
  };
}
