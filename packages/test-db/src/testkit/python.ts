import { spawn } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cacheDir, type Env } from "../cache.js";
import { withLock } from "../lock.js";

/** Python packages a test runs, pinned, and where they go in the project's cache. */
export interface PythonPackages {
  /** What they are, in messages (`stripe-python 16.1.0`). */
  readonly label: string;
  /** The folder under the cache they are installed into (`stripe-python-16.1.0`). */
  readonly folder: string;
  /** pip requirement lines, each pinned (`name==version`, with `--hash=sha256:...` when `requireHashes`). */
  readonly requirements: readonly string[];
  /** A file that exists once they are installed, relative to the folder (`stripe/__init__.py`). */
  readonly probe: string;
  /** Each wheel's hash is pinned (only where one wheel fits every machine: pure-Python ones). */
  readonly requireHashes: boolean;
}

function python(args: readonly string[], env: Env): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn("python3", args, { env: env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", (error) => resolve({ code: null, output: error.message }));
    child.once("close", (code) => resolve({ code, output }));
  });
}

const lastLine = (text: string) => text.trim().split("\n").at(-1) ?? "";

/**
 * A PYTHONPATH under which `packages` import: installed once (`python3 -m pip install --no-deps --only-binary
 * --target`) into `<cache>/<folder>`, outside the repository, as test-db installs its mongod (a lock; a temporary
 * name renamed into place). Answers why not when python3 or pip or the registry is missing, for the test to skip
 * with that reason.
 */
export async function pythonPackages(packages: PythonPackages, env: Env = process.env): Promise<{ path: string } | { unavailable: string }> {
  const target = join(cacheDir(env), packages.folder);
  const installed = () => (existsSync(join(target, packages.probe)) ? { path: target } : undefined);
  const found = installed();
  if (found) return found;
  const pip = await python(["-m", "pip", "--version"], env);
  if (pip.code !== 0) return { unavailable: `no python3 with pip (${lastLine(pip.output)})` };
  mkdirSync(cacheDir(env), { recursive: true });
  return withLock<{ path: string } | { unavailable: string }>(`${target}.lock`, installed, async () => {
    const staging = `${target}.partial-${process.pid}`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    const requirements = join(staging, "requirements.txt");
    writeFileSync(requirements, `${packages.requirements.join("\n")}\n`);
    const args = [
      "-m",
      "pip",
      "install",
      "--no-deps",
      "--only-binary=:all:",
      "--disable-pip-version-check",
      "--no-input",
      ...(packages.requireHashes ? ["--require-hashes"] : []),
    ];
    const install = await python([...args, "--target", join(staging, "tree"), "-r", requirements], { ...env, PIP_NO_INPUT: "1" });
    if (install.code !== 0 || !existsSync(join(staging, "tree", packages.probe))) {
      rmSync(staging, { recursive: true, force: true });
      return { unavailable: `pip could not install ${packages.label}: ${lastLine(install.output)}` };
    }
    renameSync(join(staging, "tree"), target);
    rmSync(staging, { recursive: true, force: true });
    return { path: target };
  });
}

/**
 * grpcio-tools (protoc for Python, and the gRPC runtime its stubs import), for the README's Python service. Its
 * wheels are built per platform and Python version, so the versions are pinned and the hashes are not (one list of
 * hashes would fit one machine only).
 */
export const GRPCIO_TOOLS: PythonPackages = {
  label: "grpcio-tools 1.85.4",
  folder: "grpcio-tools-1.85.4",
  requirements: ["grpcio-tools==1.85.4", "grpcio==1.85.4", "protobuf==7.36.2", "typing_extensions==4.16.0"],
  probe: "grpc_tools/protoc.py",
  requireHashes: false,
};
