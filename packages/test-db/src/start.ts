import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import type { Env } from "./cache.js";
import { ensureFerretDb, ferretDbArgs } from "./ferretdb.js";
import { ensureMongoJavaServer, mongoJavaServerArgs } from "./mongo-java-server.js";
import { freePort } from "./ports.js";
import { spawnServer, tail, waitForPing } from "./server-process.js";

export type Engine = "external" | "testcontainers" | "mongod" | "ferretdb" | "mongo-java-server";

export const ENGINES: readonly Engine[] = ["external", "testcontainers", "mongod", "ferretdb", "mongo-java-server"];

export interface RunningDatabase {
  /** Connection string without a database name; each user picks its own database. */
  readonly uri: string;
  readonly engine: Engine;
  readonly version: string;
  /** The server process started for this database (none for external and testcontainers). */
  readonly pid?: number;
  /** The server's log file, in the data directory (removed with a temporary one on stop; none for external and testcontainers). */
  readonly logFile?: string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Persistent data directory (npm start); omitted: a temporary one, removed on stop. */
  dataDir?: string;
  /** The environment to read MONGODB_URI, DOCKER_HOST, PATH and cache settings from (default: process.env). */
  env?: Env;
  /** Progress lines (e.g. the first-run build). */
  logger?: (line: string) => void;
  /** Port for a server started here (mongod, FerretDB); default: a free one. Lets a test restart a database at the same address. */
  port?: number;
  /** Use only this engine (default: $RMS_TEST_DB_ENGINE, else the first that works, in order). */
  engine?: Engine;
  /** Skip engines, for tests of the launcher itself. */
  skip?: readonly Engine[];
}

const READY_TIMEOUT_MS = 60_000;

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
  engine: "mongod" | "ferretdb" | "mongo-java-server",
  command: string,
  args: (dataDir: string, port: number) => string[],
  version: string,
  options: StartOptions,
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
    throw new Error(`${engine} did not start: ${(error as Error).message}\nlast lines of ${logFile}:\n${lastLines}`);
  }
  return {
    uri,
    engine,
    version,
    ...(server.child.pid ? { pid: server.child.pid } : {}),
    logFile,
    async stop() {
      await server.stop();
      cleanup();
    },
  };
}

function isEngine(name: string): name is Engine {
  return (ENGINES as readonly string[]).includes(name);
}

/**
 * A MongoDB-protocol database, found in the order of ARCHITECTURE.md:
 * MONGODB_URI; a container when a runtime answers; `mongod` on PATH; the
 * embedded FerretDB (SQLite), built and cached on first use; else
 * mongo-java-server (fetched with Maven) when there is no Go toolchain or
 * FerretDB does not build. `engine` (or $RMS_TEST_DB_ENGINE) forces one.
 */
export async function startDatabase(options: StartOptions = {}): Promise<RunningDatabase> {
  const env = options.env ?? process.env;
  const forced = options.engine ?? (env.RMS_TEST_DB_ENGINE || undefined);
  if (forced !== undefined && !isEngine(forced)) throw new Error(`unknown engine ${JSON.stringify(forced)} (RMS_TEST_DB_ENGINE): use one of ${ENGINES.join(", ")}`);
  const skip = new Set(options.skip ?? []);
  const wanted = (engine: Engine): boolean => (forced ? forced === engine : !skip.has(engine));
  const log = options.logger ?? (() => undefined);

  if (wanted("external") && (env.MONGODB_URI || forced === "external")) {
    if (!env.MONGODB_URI) throw new Error("engine external needs MONGODB_URI");
    return { uri: env.MONGODB_URI, engine: "external", version: "external", stop: async () => undefined };
  }
  if (wanted("testcontainers") && (forced === "testcontainers" || (!options.dataDir && (await containerRuntimeAnswers(env))))) {
    const { MongoDBContainer } = await import("@testcontainers/mongodb");
    const container = await new MongoDBContainer("mongo:8").start();
    return {
      uri: `${container.getConnectionString()}/?directConnection=true`,
      engine: "testcontainers",
      version: "mongo:8",
      stop: async () => {
        await container.stop();
      },
    };
  }
  const mongod = wanted("mongod") ? onPath("mongod", env) : undefined;
  if (mongod || forced === "mongod") {
    if (!mongod) throw new Error("engine mongod: no mongod on PATH");
    const args = (dir: string, port: number): string[] => ["--dbpath", dir, "--port", String(port), "--bind_ip", "127.0.0.1", "--quiet"];
    return startLocalServer("mongod", mongod, args, "mongod", options);
  }
  const failures: string[] = [];
  if (wanted("ferretdb")) {
    if (onPath("go", env) || forced === "ferretdb") {
      try {
        const ferret = await ensureFerretDb({ env, log });
        return await startLocalServer("ferretdb", ferret.path, ferretDbArgs, ferret.version, options);
      } catch (error) {
        if (forced) throw error;
        failures.push(`ferretdb: ${(error as Error).message}`);
        log(`FerretDB unavailable, trying mongo-java-server: ${(error as Error).message}`);
      }
    } else {
      failures.push("ferretdb: no go on PATH");
    }
  }
  if (wanted("mongo-java-server")) {
    try {
      const server = await ensureMongoJavaServer({ env, log });
      return await startLocalServer("mongo-java-server", "java", (dir, port) => mongoJavaServerArgs(server, dir, port), server.version, options);
    } catch (error) {
      if (forced) throw error;
      failures.push(`mongo-java-server: ${(error as Error).message}`);
    }
  }
  throw new Error(`no database engine could be started (${failures.join("; ") || "all engines skipped"})`);
}
