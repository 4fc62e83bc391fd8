// Test-only: the Kubernetes tools the deployment test runs (helm, kube-score), built from source with the machine's Go
// into the project's cache outside the repository (like the database binary: $RMS_CACHE_DIR, else
// $XDG_CACHE_HOME/rms, else ~/.cache/rms), once, under a lock, pinned by module version; the Go module proxy's
// checksum database verifies every module.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { cacheDir, withLock, type Env } from "@rms/test-db";

export const GO_TOOLS = {
  helm: { module: "helm.sh/helm/v3/cmd/helm", version: "v3.16.3", about: "1.5 to 4 minutes" },
  "kube-score": { module: "github.com/zegl/kube-score/cmd/kube-score", version: "v1.20.0", about: "0.5 to 2 minutes" },
} as const;
export type GoTool = keyof typeof GO_TOOLS;

/** `<cache>/go-tools`: the binaries (`bin/<tool>-<version>/<tool>`) and Go's own module and build caches. */
export function goToolsDir(env: Env): string {
  return join(cacheDir(env), "go-tools");
}

function binaryOf(env: Env, tool: GoTool): string {
  return join(goToolsDir(env), "bin", `${tool}-${GO_TOOLS[tool].version}`, tool);
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

/** `go version`'s line, or undefined when there is no usable `go` on PATH. */
export async function goVersion(env: Env): Promise<string | undefined> {
  const { code, output } = await run("go", ["version"], env);
  return code === 0 ? output.trim() : undefined;
}

/** Go's environment for a build that writes only into the cache: modules, build cache and GOPATH there, no cgo. */
function goEnv(env: Env, gobin: string): Env {
  const dir = goToolsDir(env);
  const flags = [env.GOFLAGS, "-modcacherw", "-trimpath"].filter(Boolean).join(" ");
  return {
    ...env,
    GOBIN: gobin,
    GOPATH: join(dir, "gopath"),
    GOMODCACHE: join(dir, "gopath", "pkg", "mod"),
    GOCACHE: join(dir, "build-cache"),
    GOFLAGS: flags,
    // The machine's Go builds it (a newer toolchain is never downloaded), statically: no C compiler needed.
    GOTOOLCHAIN: "local",
    CGO_ENABLED: "0",
  };
}

/**
 * The path of the pinned `tool`, built with `go install <module>@<version>` on first use. Parallel runs build it
 * once (a lock) and never see a half-written binary (it is installed under a temporary name and renamed into place).
 */
export async function ensureGoTool(tool: GoTool, env: Env, log: (line: string) => void): Promise<string> {
  const binary = binaryOf(env, tool);
  const { module, version, about } = GO_TOOLS[tool];
  const versionDir = join(binary, "..");
  mkdirSync(join(versionDir, ".."), { recursive: true });
  return withLock(
    `${versionDir}.lock`,
    () => (existsSync(binary) ? binary : undefined),
    async () => {
      log(`building ${tool} ${version} with go install ${module}@${version} into ${versionDir} (first run only, ${about})`);
      const staging = `${versionDir}.partial-${process.pid}`;
      rmSync(staging, { recursive: true, force: true });
      const install = await run("go", ["install", `${module}@${version}`], goEnv(env, staging));
      if (install.code !== 0 || !existsSync(join(staging, tool))) {
        rmSync(staging, { recursive: true, force: true });
        throw new Error(`go install ${module}@${version} failed:\n${install.output.trim().split("\n").slice(-15).join("\n")}`);
      }
      renameSync(staging, versionDir);
      return binary;
    },
  );
}
