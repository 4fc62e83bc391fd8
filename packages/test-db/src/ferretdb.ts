import { execFile } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { cacheDir, type Env } from "./cache.js";
import { withLock } from "./lock.js";

const run = promisify(execFile);

/** Newest first; the next is tried when a build fails. */
export const FERRETDB_VERSIONS = ["v1.24.2", "v1.24.0", "v1.23.1"] as const;
const MODULE = "github.com/FerretDB/FerretDB";

export interface FerretDbBinary {
  path: string;
  version: string;
}

/**
 * Builds FerretDB from its module source. `go install …@version` cannot be used:
 * it asks the module proxy for the version list (for deprecation notices), which
 * the proxy may refuse, and a build outside a Git checkout panics at start
 * without build/version/version.txt. So: download the module, copy it, write
 * version.txt, and build inside it.
 */
async function build(version: string, target: string, log: (line: string) => void): Promise<void> {
  const goEnv = { ...process.env, GOFLAGS: "-mod=mod", CGO_ENABLED: "0" };
  const work = mkdtempSync(join(target, "..", ".build-"));
  try {
    const { stdout } = await run("go", ["mod", "download", "-json", `${MODULE}@${version}`], { env: goEnv, maxBuffer: 1 << 20 });
    const source = (JSON.parse(stdout) as { Dir?: string }).Dir;
    if (!source) throw new Error(`go mod download gave no directory for ${MODULE}@${version}`);
    const tree = join(work, "src");
    cpSync(source, tree, { recursive: true });
    chmodSync(tree, 0o755);
    await run("chmod", ["-R", "u+w", tree]);
    writeFileSync(join(tree, "build/version/version.txt"), `${version}\n`);
    log(`building FerretDB ${version} (first run only; one to five minutes)`);
    const output = join(work, "ferretdb");
    await run("go", ["build", "-trimpath", "-buildvcs=false", "-o", output, "./cmd/ferretdb"], { cwd: tree, env: goEnv, maxBuffer: 16 << 20 });
    renameSync(output, target);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The cached FerretDB binary, built on first use (once, even with many processes asking at the same time). */
export async function ensureFerretDb(options: { env?: Env; log?: (line: string) => void } = {}): Promise<FerretDbBinary> {
  const env = options.env ?? process.env;
  const log = options.log ?? (() => undefined);
  const root = join(cacheDir(env), "ferretdb");
  mkdirSync(root, { recursive: true });
  const cached = (): FerretDbBinary | undefined => {
    for (const version of FERRETDB_VERSIONS) {
      const path = join(root, version, "ferretdb");
      if (existsSync(path)) return { path, version };
    }
    return undefined;
  };
  return withLock(join(root, ".lock"), cached, async () => {
    const failures: string[] = [];
    for (const version of FERRETDB_VERSIONS) {
      mkdirSync(join(root, version), { recursive: true });
      try {
        await build(version, join(root, version, "ferretdb"), log);
        return { path: join(root, version, "ferretdb"), version };
      } catch (error) {
        const message = (error as { stderr?: string }).stderr?.trim().split("\n").slice(-3).join(" ") || String(error);
        failures.push(`${version}: ${message}`);
        log(`FerretDB ${version} did not build: ${message}`);
      }
    }
    throw new Error(`could not build FerretDB (${failures.join("; ")})`);
  });
}

/** Command-line arguments for FerretDB's SQLite handler serving `dataDir` on `port`. */
export function ferretDbArgs(dataDir: string, port: number): string[] {
  return [
    "--handler=sqlite",
    `--sqlite-url=file:${dataDir}/`,
    `--state-dir=${dataDir}`,
    `--listen-addr=127.0.0.1:${port}`,
    "--debug-addr=-",
    "--telemetry=disable",
    "--log-level=warn",
    "--log-format=json",
  ];
}
