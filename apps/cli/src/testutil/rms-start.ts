// Test-only: `rms start` (what `npm start` runs) as a real process, on the free ports and in the temporary data
// directory a test gives it.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { eventually } from "@rms/test-db/testkit";
import { expect } from "vitest";
import { repoRoot } from "../paths.js";

/** The launcher's script (`npx rms`). */
export const RMS_BIN = join(repoRoot, "apps/cli/bin/rms.js");

export type Ports = { https: number; http: number; core: number };

/**
 * The environment of a test's `rms start`: its ports and data directory, every metrics port a free one, no database
 * or admin token from outside (it starts its own database and makes its own token), warnings and worse logged.
 */
export function stackEnv(ports: Ports, dataDir: string): Record<string, string | undefined> {
  return {
    ...process.env,
    MONGODB_URI: "",
    RMS_ADMIN_TOKEN: "",
    RMS_DATA_DIR: dataDir,
    PORT: String(ports.https),
    HTTP_PORT: String(ports.http),
    CORE_ADDR: `127.0.0.1:${ports.core}`,
    METRICS_PORT: "0",
    CORE_METRICS_PORT: "0",
    WORKER_METRICS_PORT: "0",
    LOG_LEVEL: "warn",
  };
}

export interface RmsStart {
  child: ChildProcess;
  /** Standard output and standard error, as they came. */
  output: () => string;
  /** Standard output alone: the JSON log stream. */
  stdout: () => string;
  exited: Promise<number | null>;
}

/**
 * `rms start` as a real process with `env` (in `cwd`, else this one); `npm: true` runs `npm start` itself, in the
 * repository. `started` is told of the process as soon as it is spawned, so a test can stop it even when it never
 * gets ready. Resolves once it has printed `rms: ready`; throws with its output when it exits before that.
 */
export async function startRms(
  env: Record<string, string | undefined>,
  options: { npm?: boolean; cwd?: string; started?: (stack: RmsStart) => void } = {},
): Promise<RmsStart> {
  let output = "";
  let stdout = "";
  // npm_execpath: the npm that runs this test suite; plain `npm` when run some other way.
  const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ["npm"];
  const [command, ...args] = options.npm ? [...npm, "start"] : [process.execPath, RMS_BIN, "start"];
  const cwd = options.cwd ?? (options.npm ? repoRoot : undefined);
  const child = spawn(command!, args, { ...(cwd ? { cwd } : {}), env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d) => {
    output += d;
    stdout += d;
  });
  child.stderr!.on("data", (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const stack = { child, output: () => output, stdout: () => stdout, exited };
  options.started?.(stack);
  let exitedEarly = false;
  await eventually(
    () => {
      if (child.exitCode !== null) exitedEarly = true;
      expect(output.includes("rms: ready") || exitedEarly, `rms start not ready:\n${output}`).toBe(true);
    },
    { timeoutMs: 120_000, intervalMs: 200 },
  );
  if (!output.includes("rms: ready")) throw new Error(`rms start exited early:\n${output}`);
  return stack;
}
