// The whole scale-out shape on one machine (CONTRACT.md section 10, "Scale-out"): a three-member replica set, two
// cores, two gateways, two workers and HAProxy in front of the gateways. Every process is supervised: whatever
// ends it (a crash, a chaos run's SIGKILL), it is started again on the same ports and files. `rms cluster`
// (run.ts) and `npm run chaos -- --cluster` (chaos/cluster-stack.ts) both start it here.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AdminService, bearerMetadata, createClient, mutualTlsCredentials } from "@rms/proto";
import { startReplicaSet, type ReplicaSetMember, type RunningReplicaSet } from "@rms/test-db";
import { coreEnv, gatewayEnv, workerEnv, type Resolved } from "../stack/child-env.js";
import { startNodeChild, startProgramChild, type Child } from "../stack/children.js";
import { workerNodeFlags } from "../stack/heap.js";
import type { StackConfig } from "../stack/config.js";
import { entryPoint, type ProcessKind } from "../stack/entry-points.js";
import { freePort } from "../stack/processes.js";
import { statusOk } from "../stack/start.js";
import { checkConfig, haproxyConfig, PROXY_SOURCE, type BalancedGateway } from "./haproxy.js";

/** How many of each: the contract's shape. */
export const CLUSTER_SHAPE = { members: 3, cores: 2, gateways: 2, workers: 2 } as const;

export type ClusterProcess = `core${number}` | `gateway${number}` | `worker${number}` | "haproxy";

const STOP_GRACE_MS = 15_000;
const RESTART_DELAY_MS = 500;
const READY_TIMEOUT_MS = 90_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ClusterOptions {
  /** The launcher's environment (the children's settings are taken from it as `npm start` takes them). */
  env: Readonly<Record<string, string | undefined>>;
  /** The environment, validated (PORT is HAProxy's, HTTP_PORT its plain-HTTP frontend, CORE_ADDR core 1's). */
  config: StackConfig;
  /** Tokens, keys and the data directory (the gateways' development certificate), as `npm start` resolves them. */
  resolved: Omit<Resolved, "mongoUri">;
  /** The cluster's own files: the members' data (`db/member-<n>`), HAProxy's configuration and log. */
  clusterDir: string;
  /** The `haproxy` binary. */
  haproxy: string;
  /** The replica set's election timeout (mongod's default: 10 s). */
  electionTimeoutMillis?: number;
  /** Progress and restart lines. */
  log: (line: string) => void;
  /** Called when a process exits while the cluster runs (it is then started again); `killedHere`: by `kill`. */
  onExit?: (name: ClusterProcess, how: number | string, killedHere: boolean) => void;
  /** A process that exits this many times in a row within 5 s of its start makes `failing` resolve (default 5; chaos: never). */
  giveUpAfter?: number;
  /** Aborted while starting: the start stops what it started and fails. */
  signal?: AbortSignal;
  /** Called with a process's name and id each time it is started (database members as `member<n>`; a chaos run places each in a cgroup). */
  onSpawn?: (name: string, pid: number) => void;
  /**
   * Where the gateways keep their rate limits: `mongodb` (the default here: one limit across both gateways) or
   * `memory` (each gateway its own, as a single gateway keeps them by default). The chaos run's weakened build
   * takes `memory`, so that no majority write of the gateway comes before core's (chaos/main.ts).
   */
  rateLimitStore?: "mongodb" | "memory";
  /**
   * The scripts the processes start from (default: this build's, `entryPoint`): a rolling upgrade starts the cluster on
   * an earlier release's build and `replace`s each process by this one (chaos/upgrade.ts).
   */
  entryPoints?: Readonly<Record<ProcessKind, string>>;
}

export interface Cluster {
  /** The one URL: HAProxy's HTTPS frontend. */
  readonly url: string;
  readonly databaseUri: string;
  /** The replica set started here (none when MONGODB_URI names one). */
  readonly database: RunningReplicaSet | undefined;
  /** Core n's address is `coreAddrs[n - 1]`; gateway n talks to core n. */
  readonly coreAddrs: readonly string[];
  readonly gateways: readonly BalancedGateway[];
  /** Every supervised process. */
  readonly names: readonly ClusterProcess[];
  /** The running child of a process, if one runs now. */
  running(name: ClusterProcess): Child | undefined;
  /** Signals a process if it runs now (default SIGKILL); its supervisor starts it again once it exits. */
  kill(name: ClusterProcess, signal?: NodeJS.Signals): boolean;
  /** The script a process starts from now. */
  scriptOf(name: ClusterProcess): string;
  /**
   * Starts a process from `script` from now on: the running one is stopped as a deployment stops it (SIGTERM, then
   * SIGKILL after the grace), and its supervisor starts it again from the new script. Resolves once the old one is gone.
   */
  replace(name: ClusterProcess, script: string): Promise<void>;
  /** Restarts so far, by process (database members as `member<n>`). */
  restarts(): Readonly<Record<string, number>>;
  /** Resolves with one line when a process keeps failing right after its start. */
  readonly failing: Promise<string>;
  /** Stops everything, HAProxy first and the database last; nothing is started again. */
  stop(): Promise<void>;
}

interface Slot {
  readonly launch: () => Child;
  child?: Child;
}

const kindOf = (name: ClusterProcess): ProcessKind => (name.startsWith("core") ? "core" : name.startsWith("gateway") ? "gateway" : "worker");

/** Starts the cluster; resolves once HAProxy answers `GET /v1/status` with 200 through a gateway. */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const { env, config, log } = options;
  mkdirSync(options.clusterDir, { recursive: true });
  const slots = new Map<ClusterProcess, Slot>();
  const killedHere = new WeakSet<Child>();
  const replaced = new WeakSet<Child>();
  const scripts = new Map<ClusterProcess, string>();
  const scriptOf = (name: ClusterProcess): string => scripts.get(name) ?? options.entryPoints?.[kindOf(name)] ?? entryPoint(kindOf(name));
  const restarts: Record<string, number> = {};
  const loops: Promise<void>[] = [];
  let stopping = false;
  let database: RunningReplicaSet | undefined;
  let failed: string | undefined;
  let giveUp: (line: string) => void = () => undefined;
  const failing = new Promise<string>((resolve) => (giveUp = resolve));
  void failing.then((line) => (failed = line));

  /** Waits until `probe` answers true: a process is restarted meanwhile if it dies; a process that keeps failing, or an abort, ends the wait. */
  const ready = async (what: string, probe: () => Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (options.signal?.aborted) throw new Error("stopped while starting");
      if (failed) throw new Error(failed);
      if (await probe().catch(() => false)) return;
      if (Date.now() > deadline) throw new Error(`${what}: not ready after ${READY_TIMEOUT_MS / 1000} s`);
      await sleep(200);
    }
  };

  const running = (name: ClusterProcess) => {
    const child = slots.get(name)?.child;
    return child && child.process.exitCode === null && child.process.signalCode === null ? child : undefined;
  };

  /** Starts a process and keeps it running until the cluster stops. */
  const supervise = (name: ClusterProcess, start: () => Child): Child => {
    const launch = () => {
      const child = start();
      if (child.process.pid !== undefined) options.onSpawn?.(name, child.process.pid);
      return child;
    };
    const slot: Slot = { launch };
    slots.set(name, slot);
    slot.child = launch();
    loops.push(
      (async () => {
        let quickFailures = 0;
        for (let started = Date.now(); ; started = Date.now()) {
          const child = slot.child!;
          const how = await child.exited;
          if (stopping) return;
          // Stopped here to be started from another script: as much a decision of the caller as a kill.
          const wasReplaced = replaced.has(child);
          const killed = killedHere.has(child) || wasReplaced;
          options.onExit?.(name, how, killed);
          quickFailures = !killed && Date.now() - started < 5_000 ? quickFailures + 1 : 0;
          if (quickFailures >= (options.giveUpAfter ?? 5)) {
            giveUp(`${name} exited ${quickFailures} times in a row within 5 s of its start (last: ${how})`);
            return;
          }
          if (!wasReplaced) restarts[name] = (restarts[name] ?? 0) + 1;
          if (wasReplaced) log(`${name} stopped (${how}); starting it from ${scriptOf(name)}`);
          else if (!killed) log(`${name} exited (${how}); starting it again`);
          await sleep(RESTART_DELAY_MS);
          if (stopping) return;
          slot.child = launch();
        }
      })(),
    );
    return slot.child;
  };

  /** A database member, started again on its files and port whenever it exits. */
  const superviseMember = (member: ReplicaSetMember) => {
    loops.push(
      (async () => {
        while (!stopping) {
          const how = await member.exited();
          if (stopping) return;
          restarts[`member${member.index + 1}`] = (restarts[`member${member.index + 1}`] ?? 0) + 1;
          log(`database member ${member.index + 1} (${member.host}) exited (${how}); starting it again on its files`);
          await sleep(RESTART_DELAY_MS);
          if (stopping) return;
          await member.start().catch((error: unknown) => log(`database member ${member.index + 1} did not start: ${(error as Error).message.split("\n")[0]}`));
        }
      })(),
    );
  };

  const stop = async () => {
    stopping = true;
    const kind = (prefix: string) => [...slots.entries()].filter(([name]) => name.startsWith(prefix)).map(([, slot]) => slot.child?.stop(STOP_GRACE_MS));
    for (const prefix of ["haproxy", "gateway", "worker", "core"]) await Promise.all(kind(prefix));
    await database?.stop();
    await Promise.all(loops);
  };

  try {
    if (config.MONGODB_URI) {
      log("database: MONGODB_URI (external): no members started here");
    } else {
      const dbDir = join(options.clusterDir, "db");
      database = await startReplicaSet({
        members: CLUSTER_SHAPE.members,
        dataDir: dbDir,
        env: { ...env, MONGODB_URI: "" },
        logger: log,
        ...(options.electionTimeoutMillis !== undefined ? { electionTimeoutMillis: options.electionTimeoutMillis } : {}),
        ...(options.onSpawn ? { onSpawn: (index: number, pid: number) => options.onSpawn?.(`member${index + 1}`, pid) } : {}),
      });
      for (const member of database.members) superviseMember(member);
      log(
        `database: ${CLUSTER_SHAPE.members} members of replica set ${database.replicaSet} at ${database.uri} (mongod ${database.version}), data in ` +
          `${dbDir}/member-{1..${CLUSTER_SHAPE.members}}`,
      );
    }
    const resolved: Resolved = { ...options.resolved, mongoUri: config.MONGODB_URI ?? database!.uri };

    // Cores: core 1 on CORE_ADDR (where `npx rms` looks), core 2 on a free port of the same host.
    const coreHost = config.CORE_ADDR.slice(0, config.CORE_ADDR.lastIndexOf(":"));
    const coreAddrs = [config.CORE_ADDR];
    while (coreAddrs.length < CLUSTER_SHAPE.cores) coreAddrs.push(`${coreHost}:${await freePort()}`);
    for (const [i, addr] of coreAddrs.entries()) {
      supervise(`core${i + 1}`, () =>
        startNodeChild(`core${i + 1}`, scriptOf(`core${i + 1}`), coreEnv(env, { ...config, CORE_ADDR: addr, CORE_METRICS_PORT: 0 }, resolved)),
      );
    }
    await Promise.all(
      coreAddrs.map(async (addr, i) => {
        const admin = createClient(AdminService, addr, {
          metadata: bearerMetadata(resolved.adminToken),
          timeoutMs: 2_000,
          ...(resolved.coreTls ? { credentials: mutualTlsCredentials(resolved.coreTls) } : {}),
        });
        try {
          await ready(`core ${i + 1}`, () => admin.listAccounts({ limit: 1 }).then(() => true));
        } finally {
          admin.close();
        }
      }),
    );

    // Workers share only the database; they start once core has made the indexes.
    for (let n = 1; n <= CLUSTER_SHAPE.workers; n++) {
      supervise(`worker${n}`, () =>
        startNodeChild(
          `worker${n}`,
          scriptOf(`worker${n}`),
          workerEnv(env, { ...config, WORKER_METRICS_PORT: 0 }, resolved, n),
          "inherit",
          workerNodeFlags(config.WORKER_HEAP_MB),
        ),
      );
    }

    // Gateways on loopback only (HAProxy is their way in), each talking to its own core, trusting HAProxy's source
    // address for its PROXY protocol header, and sharing the rate limits through MongoDB (unless told otherwise). One at a time: the first
    // makes the development certificate both serve.
    const gateways: BalancedGateway[] = [];
    for (let n = 1; n <= CLUSTER_SHAPE.gateways; n++) {
      const name = `gateway${n}` as const;
      const gateway: BalancedGateway = { name, port: await freePort(), httpPort: config.HTTP_PORT === 0 ? null : await freePort() };
      gateways.push(gateway);
      const gatewayConfig: StackConfig = {
        ...config,
        CORE_ADDR: coreAddrs[(n - 1) % coreAddrs.length]!,
        HOST: "127.0.0.1",
        PORT: gateway.port,
        HTTP_PORT: gateway.httpPort ?? 0,
        METRICS_PORT: 0,
        // HAProxy's PROXY headers are believed from its source address only, and nothing else of it: forwarded headers
        // from there are not (PROXY_PROTOCOL_PEERS apart from TRUSTED_PROXIES, CONTRACT.md section 8).
        TRUSTED_PROXIES: config.TRUSTED_PROXIES,
        PROXY_PROTOCOL_PEERS: [...config.PROXY_PROTOCOL_PEERS, PROXY_SOURCE],
        RATE_LIMIT_STORE: options.rateLimitStore ?? "mongodb",
      };
      supervise(name, () => startNodeChild(name, scriptOf(name), gatewayEnv(env, gatewayConfig, resolved)));
      await ready(gateway.name, () => statusOk(gateway.port));
    }

    const configFile = join(options.clusterDir, "haproxy.cfg");
    const logFile = join(options.clusterDir, "haproxy.log");
    writeFileSync(
      configFile,
      `${haproxyConfig({ host: config.HOST ?? "0.0.0.0", port: config.PORT, httpPort: config.HTTP_PORT === 0 ? null : config.HTTP_PORT, gateways })}\n`,
    );
    const refused = await checkConfig(options.haproxy, configFile, logFile);
    if (refused) throw new Error(refused);
    const haproxyEnv = Object.fromEntries(Object.entries({ PATH: env.PATH, HOME: env.HOME, RMS_DATA_DIR: resolved.dataDir }).filter(([, v]) => v)) as Record<
      string,
      string
    >;
    supervise("haproxy", () => startProgramChild("haproxy", options.haproxy, ["-db", "-f", configFile], haproxyEnv, logFile));
    await ready("HAProxy", () => statusOk(config.PORT));

    return {
      url: `https://localhost:${config.PORT}/v1`,
      databaseUri: resolved.mongoUri,
      database,
      coreAddrs,
      gateways,
      names: [...slots.keys()],
      running,
      kill(name, signal = "SIGKILL") {
        const child = running(name);
        if (!child) return false;
        killedHere.add(child);
        return child.process.kill(signal);
      },
      scriptOf,
      async replace(name, script) {
        scripts.set(name, script);
        const child = running(name);
        if (!child) return;
        replaced.add(child);
        await child.stop(STOP_GRACE_MS);
      },
      restarts: () => ({ ...restarts }),
      failing,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
