import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import type { Env } from "./cache.js";
import { ensureMongoJavaServer, mongoJavaServerArgs, type MongoJavaServerStorage } from "./mongo-java-server.js";
import { freePort } from "./ports.js";
import { spawnServer, tail, waitForPing } from "./server-process.js";

export type Engine = "external" | "testcontainers" | "mongod" | "mongodb-memory-server" | "mongo-java-server";

/** In the order they are tried. */
export const ENGINES: readonly Engine[] = ["external", "testcontainers", "mongod", "mongodb-memory-server", "mongo-java-server"];

export interface RunningDatabase {
  /** Connection string without a database name; each user picks its own database. */
  readonly uri: string;
  readonly engine: Engine;
  readonly version: string;
  /** mongo-java-server only: an H2 file in the data directory, or memory. */
  readonly storage?: MongoJavaServerStorage;
  /** The server process started for this database (none for external and testcontainers). */
  readonly pid?: number;
  /** The server's log file, in the data directory (removed with a temporary one on stop; none for external and testcontainers). */
  readonly logFile?: string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Persistent data directory (npm start); omitted: a temporary one, removed on stop. */
  dataDir?: string;
  /** The environment to read MONGODB_URI, RMS_DB_ENGINE, DOCKER_HOST, PATH and cache settings from (default: process.env). */
  env?: Env;
  /** Progress lines (e.g. the first-run build, an engine given up). */
  logger?: (line: string) => void;
  /** Port for a server started here; default: a free one. Lets a test restart a database at the same address. */
  port?: number;
  /** Use only this engine (default: $RMS_DB_ENGINE, else $RMS_TEST_DB_ENGINE, else the first that works, in order). */
  engine?: Engine;
  /** mongo-java-server's storage; default: the H2 file with a `dataDir`, memory (the fastest) without. */
  storage?: MongoJavaServerStorage;
  /** Skip engines, for tests of the launcher itself. */
  skip?: readonly Engine[];
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

/** "mongo-java-server 1.47.0 (H2 file)": the line npm start and the test setup print. */
export function describeDatabase(db: Pick<RunningDatabase, "engine" | "version" | "storage">): string {
  const storage = db.storage === "h2" ? " (H2 file)" : db.storage === "memory" ? " (in memory)" : "";
  return `${db.engine} ${db.version}${storage}`;
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

async function startLocalServer(
  engine: "mongod" | "mongodb-memory-server" | "mongo-java-server",
  command: string,
  args: (dataDir: string, port: number) => string[],
  version: string,
  options: StartOptions,
  storage?: MongoJavaServerStorage,
): Promise<RunningDatabase> {
  const { dir, cleanup } = dataDirectory(options.dataDir);
  const port = options.port ?? (await freePort());
  const logFile = join(dir, `${engine}.log`);
  const server = spawnServer(command, args(dir, port), logFile);
  const uri = `mongodb://127.0.0.1:${port}/`;
  try {
    await waitForPing(uri, READY_TIMEOUT_MS, server);
  } catch (error) {
    await server.stop();
    const lastLines = tail(logFile);
    cleanup();
    throw new DatabaseStartError(`${engine} did not start: ${firstLine(error)}`, `last lines of ${logFile}:\n${lastLines}`);
  }
  return {
    uri,
    engine,
    version,
    ...(storage ? { storage } : {}),
    ...(server.child.pid ? { pid: server.child.pid } : {}),
    logFile,
    async stop() {
      await server.stop();
      cleanup();
    },
  };
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
}

function isEngine(name: string): name is Engine {
  return (ENGINES as readonly string[]).includes(name);
}

const mongodArgs = (dir: string, port: number): string[] => ["--dbpath", dir, "--port", String(port), "--bind_ip", "127.0.0.1", "--quiet"];

/** One engine, or why it cannot be used here (a reason, not an exception, when it simply is not there). */
type Attempt = RunningDatabase | { unavailable: string };

async function tryEngine(engine: Engine, options: StartOptions, env: Env, forced: boolean, log: (line: string) => void): Promise<Attempt> {
  switch (engine) {
    case "external":
      if (!env.MONGODB_URI) return { unavailable: "MONGODB_URI is not set" };
      return { uri: env.MONGODB_URI, engine, version: "external", stop: async () => undefined };
    case "testcontainers": {
      // Tests only: npm start's data must outlive any container.
      if (!forced && (options.dataDir || !(await containerRuntimeAnswers(env)))) return { unavailable: "no container runtime answers" };
      const { MongoDBContainer } = await import("@testcontainers/mongodb");
      const container = await new MongoDBContainer("mongo:8").start();
      return {
        uri: `${container.getConnectionString()}/?directConnection=true`,
        engine,
        version: "mongo:8",
        stop: async () => {
          await container.stop();
        },
      };
    }
    case "mongod": {
      const mongod = onPath("mongod", env);
      if (!mongod) return { unavailable: "no mongod on PATH" };
      return startLocalServer(engine, mongod, mongodArgs, "mongod", options);
    }
    case "mongodb-memory-server": {
      // Loaded only when reached: the library and its download stack are not needed on the other paths.
      const { ensureMongodBinary, NoDownloadRoute } = await import("./mongodb-memory-server.js");
      let binary: Awaited<ReturnType<typeof ensureMongodBinary>>;
      try {
        binary = await ensureMongodBinary(log);
      } catch (error) {
        if (error instanceof NoDownloadRoute) return { unavailable: error.message };
        throw error;
      }
      return startLocalServer(engine, binary.path, mongodArgs, binary.version, options);
    }
    case "mongo-java-server": {
      const server = await ensureMongoJavaServer({ env, log });
      const storage = options.storage ?? (options.dataDir ? "h2" : "memory");
      return startLocalServer(engine, "java", (dir, port) => mongoJavaServerArgs(server, storage, dir, port), server.version, options, storage);
    }
  }
}

/**
 * A MongoDB-protocol database, the first that works of ENGINES: MONGODB_URI; a
 * container when a runtime answers (tests only); `mongod` on PATH; a real mongod
 * through mongodb-memory-server (cached, or downloaded when the site answers);
 * mongo-java-server (Java; jars fetched with Maven once). `engine` (or
 * $RMS_DB_ENGINE) forces one: it starts or fails with one line, never falls back.
 */
export async function startDatabase(options: StartOptions = {}): Promise<RunningDatabase> {
  const env = options.env ?? process.env;
  const forced = options.engine ?? (env.RMS_DB_ENGINE || env.RMS_TEST_DB_ENGINE || undefined);
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
      // Worth a line only where the user might have expected it to work.
      if (engine === "mongodb-memory-server") log(`${engine}: ${attempt.unavailable}; trying the next engine`);
      failures.push(`${engine}: ${attempt.unavailable}`);
    } catch (error) {
      log(`${engine}: ${firstLine(error)}; trying the next engine`);
      failures.push(`${engine}: ${firstLine(error)}`);
    }
  }
  throw new DatabaseStartError(`no database engine could be started (${failures.join("; ") || "all engines skipped"})`);
}
