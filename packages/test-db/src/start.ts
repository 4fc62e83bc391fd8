import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import type { Env } from "./cache.js";
import { ensureFerretDb, ferretDbArgs } from "./ferretdb.js";
import { freePort } from "./ports.js";
import { spawnServer, tail, waitForPing } from "./server-process.js";

export type Engine = "external" | "testcontainers" | "mongod" | "ferretdb";

export interface RunningDatabase {
  /** Connection string without a database name; each user picks its own database. */
  readonly uri: string;
  readonly engine: Engine;
  readonly version: string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Persistent data directory (npm start); omitted: a temporary one, removed on stop. */
  dataDir?: string;
  /** The environment to read MONGODB_URI, DOCKER_HOST, PATH and cache settings from (default: process.env). */
  env?: Env;
  /** Progress lines (e.g. the first-run build). */
  logger?: (line: string) => void;
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

async function startLocalServer(engine: "mongod" | "ferretdb", binary: string, version: string, options: StartOptions): Promise<RunningDatabase> {
  const { dir, cleanup } = dataDirectory(options.dataDir);
  const port = await freePort();
  const args = engine === "mongod" ? ["--dbpath", dir, "--port", String(port), "--bind_ip", "127.0.0.1", "--quiet"] : ferretDbArgs(dir, port);
  const logFile = join(dir, `${engine}.log`);
  const server = spawnServer(binary, args, logFile);
  const uri = `mongodb://127.0.0.1:${port}/`;
  try {
    await waitForPing(uri, READY_TIMEOUT_MS, server);
  } catch (error) {
    const lastLines = tail(logFile);
    await server.stop();
    cleanup();
    throw new Error(`${engine} did not start: ${(error as Error).message}\n${lastLines}`);
  }
  return {
    uri,
    engine,
    version,
    async stop() {
      await server.stop();
      cleanup();
    },
  };
}

/**
 * A MongoDB-protocol database, found in the order of ARCHITECTURE.md:
 * MONGODB_URI; a container when a runtime answers; `mongod` on PATH; else the
 * embedded FerretDB (SQLite), built and cached on first use.
 */
export async function startDatabase(options: StartOptions = {}): Promise<RunningDatabase> {
  const env = options.env ?? process.env;
  const skip = new Set(options.skip ?? []);
  if (env.MONGODB_URI && !skip.has("external")) {
    return { uri: env.MONGODB_URI, engine: "external", version: "external", stop: async () => undefined };
  }
  if (!skip.has("testcontainers") && !options.dataDir && (await containerRuntimeAnswers(env))) {
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
  const mongod = skip.has("mongod") ? undefined : onPath("mongod", env);
  if (mongod) return startLocalServer("mongod", mongod, "mongod", options);
  const ferret = await ensureFerretDb({ env, ...(options.logger ? { log: options.logger } : {}) });
  return startLocalServer("ferretdb", ferret.path, ferret.version, options);
}
