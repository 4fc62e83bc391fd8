import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * A command-line tool a test drives when it is installed: the path in `envVariable`, the first on the PATH, or Go's
 * bin directory (where `go install` puts grpcurl and promtool); null when none exists, and the test says it skipped.
 */
export function installedTool(name: string, envVariable: string): string | null {
  const candidates = [process.env[envVariable], ...(process.env["PATH"] ?? "").split(":").map((dir) => join(dir, name)), join(homedir(), "go", "bin", name)];
  return candidates.find((path): path is string => path !== undefined && path !== "" && existsSync(path)) ?? null;
}

/**
 * `promtool` (Prometheus's own checker) from PROMTOOL, the PATH or Go's bin directory (`go install
 * github.com/prometheus/prometheus/cmd/promtool@v0.316.0`), when it runs; looked up once, on first use (this module is
 * imported by most test files).
 */
let promtool: string | null | undefined;
function promtoolPath(): string | null {
  if (promtool === undefined) {
    const found = installedTool("promtool", "PROMTOOL");
    promtool = found !== null && spawnSync(found, ["--version"], { stdio: "ignore" }).status === 0 ? found : null;
  }
  return promtool;
}

/** True when promtool is installed and runs. */
export function promtoolInstalled(): boolean {
  return promtoolPath() !== null;
}

/** What `promtool check metrics` says of an exposition: its exit status and output (promtool must be installed). */
export function promtoolCheck(text: string): { status: number | null; output: string } {
  const path = promtoolPath();
  if (!path) throw new Error("promtool is not installed (PROMTOOL, the PATH or Go's bin directory)");
  const run = spawnSync(path, ["check", "metrics"], { input: text, encoding: "utf8" });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}
