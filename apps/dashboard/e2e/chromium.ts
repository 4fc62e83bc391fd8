// Chromium for the browser tests: the system's package (never a browser download), found on PATH or where the
// packages put it; else, as root with apt-get, installed with `apt-get install -y chromium` (after `apt-get update`
// when the package lists are missing), saying so in one line, as the cluster does for HAProxy; else the reason the
// browser tests are skipped, in one line.
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync } from "node:fs";
import { delimiter, join } from "node:path";

const NAMES = ["chromium", "chromium-browser", "google-chrome-stable", "google-chrome"];
const HOW_TO_GET_IT =
  "install it from the system's packages (Debian, Ubuntu: sudo apt-get install chromium; Fedora: sudo dnf install chromium; macOS: brew install --cask " +
  "chromium) or set CHROMIUM_PATH";

function onPath(command: string, env: Readonly<Record<string, string | undefined>>): string | undefined {
  const dirs = [...(env.PATH ?? "").split(delimiter), "/usr/bin", "/usr/local/bin", "/snap/bin"];
  return dirs.map((dir) => join(dir, command)).find((path) => path.startsWith("/") && existsSync(path));
}

function findBrowser(env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (env.CHROMIUM_PATH && existsSync(env.CHROMIUM_PATH)) return env.CHROMIUM_PATH;
  for (const name of NAMES) {
    const found = onPath(name, env);
    if (found) return found;
  }
  return undefined;
}

function run(command: string, args: readonly string[], logFile: string): Promise<number> {
  const log = openSync(logFile, "a");
  const child = spawn(command, args, { stdio: ["ignore", log, log], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  closeSync(log);
  return new Promise((resolve) => {
    child.once("error", () => resolve(127));
    child.once("exit", (code) => resolve(code ?? 1));
  });
}

/** The browser's path, or why there is none (the one line to print before skipping). */
export async function findOrInstallChromium(
  env: Readonly<Record<string, string | undefined>>,
  logFile: string,
  say: (line: string) => void,
): Promise<{ path: string } | { missing: string }> {
  const found = findBrowser(env);
  if (found) return { path: found };
  const apt = onPath("apt-get", env);
  if (!apt || process.getuid?.() !== 0) return { missing: `Chromium is needed by the dashboard's browser tests and is not installed: ${HOW_TO_GET_IT}` };
  say(`Chromium is not installed: installing it from the system's packages (apt-get install -y chromium, as root; output in ${logFile})`);
  const install = () => run(apt, ["install", "-y", "--no-install-recommends", "chromium"], logFile);
  if ((await install()) !== 0 && (await run(apt, ["update"], logFile)) === 0) await install();
  const installed = findBrowser(env);
  return installed ? { path: installed } : { missing: `Chromium could not be installed with apt-get (see ${logFile}): ${HOW_TO_GET_IT}` };
}
