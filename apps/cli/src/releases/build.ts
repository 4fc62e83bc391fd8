// An earlier release's build, beside the current tree: a `git worktree` of its commit, built once with its own
// `npm run build` and kept in the launcher's cache outside the repository, keyed by the full commit id. The release
// data maker starts that build's stack to write a database (make-data.ts), and the chaos run's rolling upgrade starts
// a cluster on it (chaos/upgrade.ts).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cacheDir, withLock } from "@rms/test-db";
import { repoRoot } from "../paths.js";
import { PROCESS_KINDS, type ProcessKind } from "../stack/entry-points.js";

/** A built tree of one commit. */
export interface ReleaseBuild {
  /** The full commit id. */
  readonly commit: string;
  /** The `version` of its root `package.json` (the release, "1.4.0"). */
  readonly release: string;
  /** Its worktree, built. */
  readonly dir: string;
  /** The script of a process kind in that tree, as its `deploy/image/processes.json` names it. */
  entryPoint(kind: ProcessKind | "rms"): string;
}

/** A commit that cannot be built here: one line. */
export class ReleaseBuildError extends Error {}

/** Marks a finished build; a tree without it is built (again). */
const BUILT = ".rms-release-built";

function run(command: string, args: readonly string[], cwd: string, logFile?: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const log = logFile ? openSync(logFile, "a") : undefined;
    const child = spawn(command, args, { cwd, stdio: ["ignore", log ?? "pipe", log ?? "pipe"] });
    if (log !== undefined) closeSync(log);
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.once("error", (error) => resolve({ code: null, output: error.message }));
    child.once("close", (code) => resolve({ code, output }));
  });
}

/** The full id of `commit` (a tag, a short id) in this repository. */
export async function fullCommit(commit: string): Promise<string> {
  const parsed = await run("git", ["rev-parse", "--verify", "--quiet", `${commit}^{commit}`], repoRoot);
  const id = parsed.output.trim();
  if (parsed.code !== 0 || !/^[0-9a-f]{40}$/.test(id)) throw new ReleaseBuildError(`no commit ${JSON.stringify(commit)} in this repository`);
  return id;
}

/** Where the build of `commit` is kept: `<cache>/builds/<commit>`. */
export function buildDirectory(env: Readonly<Record<string, string | undefined>>, commit: string): string {
  return join(cacheDir(env), "builds", commit);
}

function describe(dir: string, commit: string): ReleaseBuild {
  const table = JSON.parse(readFileSync(join(dir, "deploy", "image", "processes.json"), "utf8")) as Record<string, string>;
  const release = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version;
  return {
    commit,
    release,
    dir,
    entryPoint(kind) {
      const script = table[kind];
      if (!script) throw new ReleaseBuildError(`the build of ${commit} names no script for ${kind}`);
      return join(dir, script);
    },
  };
}

/**
 * The build of `commit`, made on first use: `git worktree add --detach` into the cache, then its `npm run build`
 * (which installs its own dependencies), its output in `<dir>.build.log`. Parallel callers build it once (a lock).
 */
export async function releaseBuild(
  commit: string,
  options: { env?: Readonly<Record<string, string | undefined>>; log?: (line: string) => void } = {},
): Promise<ReleaseBuild> {
  const env = options.env ?? process.env;
  const log = options.log ?? (() => undefined);
  const id = await fullCommit(commit);
  const dir = buildDirectory(env, id);
  const built = () => (existsSync(join(dir, BUILT)) ? describe(dir, id) : undefined);
  mkdirSync(join(dir, ".."), { recursive: true });
  return withLock(`${dir}.lock`, built, async () => {
    if (!existsSync(join(dir, "package.json"))) {
      log(`adding a worktree of ${id.slice(0, 12)} at ${dir}`);
      const added = await run("git", ["worktree", "add", "--detach", "--force", dir, id], repoRoot);
      if (added.code !== 0) throw new ReleaseBuildError(`git worktree add of ${id.slice(0, 12)} failed: ${added.output.trim().split("\n").at(-1)}`);
    }
    log(`building ${id.slice(0, 12)} (npm run build; first use of this commit only; log: ${dir}.build.log)`);
    const build = await run("npm", ["run", "build"], dir, `${dir}.build.log`);
    if (build.code !== 0) throw new ReleaseBuildError(`the build of ${id.slice(0, 12)} failed (exit ${build.code}): see ${dir}.build.log`);
    for (const kind of PROCESS_KINDS) {
      const described = describe(dir, id);
      if (!existsSync(described.entryPoint(kind))) throw new ReleaseBuildError(`the build of ${id.slice(0, 12)} has no ${described.entryPoint(kind)}`);
    }
    writeFileSync(join(dir, BUILT), `${new Date().toISOString()}\n`);
    return describe(dir, id);
  });
}
