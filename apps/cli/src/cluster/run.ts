// `npm run cluster` / `rms cluster`: the cluster (cluster.ts) in the foreground, as `npm start` runs the single
// stack: one URL printed; SIGTERM or SIGINT stops every process, and none outlives it.
import { join } from "node:path";
import { AdminService, bearerMetadata, coreTlsFilesFromEnv, createClient, mutualTlsCredentials } from "@rms/proto";
import { z } from "zod";
import { ConfigError, parseEnvironment } from "@rms/config";
import { ensureAdminToken, ensureClientsFile, ensureGatewayToken, ensureSecretKey } from "../admin-token.js";
import { adminTokenFileOf, clientsFileOf, dataDirOf, gatewayTokenFileOf, secretKeyFileOf } from "../paths.js";
import { parseStackConfig, type StackConfig } from "../stack/config.js";
import { makePrivate, PRIVATE_UMASK } from "../stack/private-dir.js";
import { bootstrapFirstAccount } from "../stack/start.js";
import { CLUSTER_SHAPE, startCluster, type Cluster } from "./cluster.js";
import { findOrInstallHaproxy, HaproxyMissing } from "./haproxy.js";

const PARENT_WATCH_MS = 500;
const say = (line: string) => process.stderr.write(`rms: ${line}\n`);

/** The cluster's own variable, beside those of `npm start` (stack/config.ts). */
const clusterSchema = z.object({
  CLUSTER_ELECTION_TIMEOUT_MS: z
    .string()
    .trim()
    .regex(/^\d{3,5}$/, "must be a whole number of milliseconds from 500 to 60000")
    .transform(Number)
    .refine((n) => n >= 500 && n <= 60_000, "must be a whole number of milliseconds from 500 to 60000")
    .optional(),
});

/** `rms cluster`: starts the cluster and runs until SIGTERM or SIGINT (exit 0), or until a process keeps failing (exit 1). */
export async function runCluster(env: Record<string, string | undefined>): Promise<number> {
  let config: StackConfig;
  let electionTimeoutMillis: number | undefined;
  try {
    config = parseStackConfig(env);
    electionTimeoutMillis = parseEnvironment(clusterSchema, env).CLUSTER_ELECTION_TIMEOUT_MS;
  } catch (error) {
    if (error instanceof ConfigError) {
      say(error.message);
      return 2;
    }
    throw error;
  }

  let cluster: Cluster | undefined;
  let stopping: Promise<void> | undefined;
  const starting = new AbortController();
  const stopAll = () => (stopping ??= (async () => void (await cluster?.stop()))());
  let resolveExit: (code: number) => void = () => {};
  const exitCode = new Promise<number>((resolve) => (resolveExit = resolve));
  const stopFor = (why: string) => {
    say(`${why}: stopping`);
    // While starting, the start itself stops what it started (and fails, below).
    starting.abort();
    void stopAll().then(() => resolveExit(0));
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => stopFor(signal));
  // Whoever started us may die without signalling us, even by SIGKILL: we are then re-parented, and stop.
  const parent = process.ppid;
  const parentWatch = setInterval(() => {
    if (process.ppid !== parent && !stopping) stopFor("parent process gone");
  }, PARENT_WATCH_MS);
  parentWatch.unref();

  const dataDir = dataDirOf(env);
  const clusterDir = join(dataDir, "cluster");
  try {
    process.umask(PRIVATE_UMASK);
    makePrivate(dataDir);
    makePrivate(clusterDir);
    // The same credentials as `npm start` (.data/), so that `npx rms` works against either.
    const adminToken = ensureAdminToken(env, adminTokenFileOf(env));
    const gatewayToken = ensureGatewayToken(env, gatewayTokenFileOf(env));
    const secretKey = ensureSecretKey(env, secretKeyFileOf(env));
    // Both cores read the same caller table (each re-reads it on its own SIGHUP).
    const clientsFile = ensureClientsFile(env, clientsFileOf(env));
    const coreTls = coreTlsFilesFromEnv(env);
    const haproxy = await findOrInstallHaproxy(env, join(clusterDir, "haproxy-install.log"), say);
    cluster = await startCluster({
      env,
      config,
      resolved: { adminToken, gatewayToken, coreTls, dataDir, secretKey, clientsFile },
      clusterDir,
      haproxy,
      ...(electionTimeoutMillis !== undefined ? { electionTimeoutMillis } : {}),
      log: say,
      signal: starting.signal,
    });
    const admin = createClient(AdminService, cluster.coreAddrs[0]!, {
      metadata: bearerMetadata(adminToken),
      timeoutMs: 5_000,
      ...(coreTls ? { credentials: mutualTlsCredentials(coreTls) } : {}),
    });
    try {
      await bootstrapFirstAccount(admin, config, dataDir);
    } finally {
      admin.close();
    }
    if (starting.signal.aborted) return exitCode;
    say(
      `cluster: cores at ${cluster.coreAddrs.join(" and ")} (gateway n talks to core n); gateways at ` +
        `${cluster.gateways.map((g) => `127.0.0.1:${g.port}`).join(" and ")}; ${CLUSTER_SHAPE.workers} workers; HAProxy configuration ` +
        `${join(clusterDir, "haproxy.cfg")}`,
    );
    say(
      `ready: ${cluster.url} (HAProxy in front of ${CLUSTER_SHAPE.gateways} gateways; plain HTTP ` +
        `${config.HTTP_PORT ? `on ${config.HTTP_PORT}, rejecting: a key sent there is revoked` : "off"})`,
    );
    void cluster.failing.then((line) => {
      if (stopping) return;
      say(`${line}; stopping`);
      void stopAll().then(() => resolveExit(1));
    });
  } catch (error) {
    if (starting.signal.aborted) return exitCode;
    if (error instanceof HaproxyMissing) say(error.message);
    else say(`failed to start: ${error instanceof Error ? error.message : String(error)}`);
    await stopAll();
    return 1;
  }
  return exitCode;
}
