// `npm run chaos -- --cluster`: the chaos load against the cluster of `npm run cluster` (cluster/cluster.ts), in a
// throwaway directory: three mongod members, two cores, two gateways, two workers, HAProxy in front. The cluster's
// own supervision starts every killed process again.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunningReplicaSet } from "@rms/test-db";
import { CLUSTER_SHAPE, startCluster, type Cluster, type ClusterProcess } from "../cluster/cluster.js";
import { findOrInstallHaproxy } from "../cluster/haproxy.js";
import { parseStackConfig } from "../stack/config.js";
import { ADMIN_TOKEN, freePort, GATEWAY_TOKEN } from "../stack/processes.js";
import { log } from "./log.js";
import type { ProcessKind } from "../stack/entry-points.js";
import type { ChaosStack, ProcessName, StackOptions } from "./stack.js";

/** The replica set's election timeout here (mongod's default is 10 s): elections within 2 to 4 s keep the run short. */
export const CHAOS_ELECTION_TIMEOUT_MS = 2_000;

export interface ChaosCluster extends ChaosStack {
  readonly cluster: Cluster;
  readonly set: RunningReplicaSet;
}

/**
 * `onSpawn`: called with each process's name and id as it starts (partitions.ts places it in its cgroup). `entryPoints`:
 * the build the processes start from (a rolling upgrade's earlier release; default this build).
 */
export async function startChaosCluster(
  options: StackOptions,
  onSpawn?: (name: string, pid: number) => void,
  entryPoints?: Readonly<Record<ProcessKind, string>>,
): Promise<ChaosCluster> {
  const dir = mkdtempSync(join(tmpdir(), "rms-chaos-cluster-"));
  const databaseName = "chaos";
  const env: Record<string, string | undefined> = {
    ...process.env,
    MONGODB_URI: "",
    MONGODB_DATABASE: databaseName,
    RMS_DATA_DIR: dir,
    PORT: String(await freePort()),
    HTTP_PORT: "0",
    CORE_ADDR: `127.0.0.1:${await freePort()}`,
    TRUSTED_PROXIES: "",
    LOG_LEVEL: "fatal",
    RATE_LIMIT_TEST: "100000",
    RATE_LIMIT_LIVE: "100000",
    RATE_LIMIT_ADDRESS: "100000",
    RMS_FAULTS: options.coreFaults,
    ...options.settings,
  };
  const config = parseStackConfig(env);
  let selfCrashes = 0;
  const cluster = await startCluster({
    env,
    config,
    resolved: { adminToken: ADMIN_TOKEN, gatewayToken: GATEWAY_TOKEN, coreTls: null, dataDir: dir, secretKey: options.settings.RMS_SECRET_KEY! },
    clusterDir: join(dir, "cluster"),
    haproxy: await findOrInstallHaproxy(env, join(dir, "haproxy-install.log"), log),
    electionTimeoutMillis: CHAOS_ELECTION_TIMEOUT_MS,
    log: (line) => {
      // Restarts of what the run killed are expected; say the rest.
      if (!/exited \(SIGKILL\); starting it again/.test(line)) log(line);
    },
    onExit: (name, how, killedHere) => {
      if (name.startsWith("core") && how === "SIGKILL" && !killedHere) selfCrashes++;
    },
    giveUpAfter: Number.POSITIVE_INFINITY,
    ...(onSpawn ? { onSpawn } : {}),
    ...(entryPoints ? { entryPoints } : {}),
    ...(options.rateLimitStore ? { rateLimitStore: options.rateLimitStore } : {}),
  });
  const workerNames = Array.from({ length: CLUSTER_SHAPE.workers }, (_, i) => `worker${i + 1}` as const);
  const killable: ProcessName[] = [
    ...Array.from({ length: CLUSTER_SHAPE.cores }, (_, i) => `core${i + 1}` as const),
    ...Array.from({ length: CLUSTER_SHAPE.gateways }, (_, i) => `gateway${i + 1}` as const),
    ...workerNames,
  ];
  return {
    cluster,
    set: cluster.database!,
    dir,
    databaseUri: cluster.databaseUri,
    databaseName,
    coreAddr: cluster.coreAddrs[0]!,
    gatewayPort: config.PORT,
    workerNames,
    killable,
    selfCrashes: () => selfCrashes,
    running: (name) => cluster.running(name as ClusterProcess),
    kill: (name) => cluster.kill(name as ClusterProcess),
    // The noisy-neighbour phase, the one caller, does not run against the cluster (main.ts).
    endCoreFaults: () => Promise.reject(new Error("the cluster's cores keep their crash points")),
    stopProcesses: () => cluster.stop(),
    async close() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
