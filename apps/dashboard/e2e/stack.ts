// The real stack for the browser tests: `rms start` (what `npm start` runs: an embedded MongoDB, core, a worker and
// the gateway, which serves the built dashboard) on free ports and a fresh data directory, so its first start
// prints the secret key, the curl line and the dashboard's sign-in link, as a new user sees them.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "@rms/test-db";

const runFile = promisify(execFile);
const repoRoot = new URL("../../../", import.meta.url).pathname;
const rmsBin = join(repoRoot, "apps/cli/bin/rms.js");
const dashboardBuild = join(repoRoot, "apps/dashboard/dist");

/** The files a build's page and scripts name (`/dashboard/assets/index-<hash>.js`, `./papaparse.min-<hash>.js`) that `dir` lacks. */
function missingAssets(dir: string): string[] {
  const index = join(dir, "index.html");
  if (!existsSync(index)) return ["index.html"];
  const assets = join(dir, "assets");
  const texts = [
    readFileSync(index, "utf8"),
    ...(existsSync(assets) ? readdirSync(assets) : []).filter((f) => f.endsWith(".js")).map((f) => readFileSync(join(assets, f), "utf8")),
  ];
  const named = new Set(texts.flatMap((text) => [...text.matchAll(/(?:\/dashboard\/assets\/|\.\/)([\w.-]+\.(?:js|css))/g)].map((m) => m[1]!)));
  return [...named].filter((name) => !existsSync(join(assets, name)));
}

/**
 * A copy of the dashboard's build for one stack to serve: other packages' tests run `npm start`, whose build rewrites
 * apps/dashboard/dist while these tests run (a page asked for meanwhile answered 500, an asset's name changed under a
 * loaded page). Copied again while the copy is not one whole build (taken mid-build), for up to two minutes.
 */
async function snapshotDashboardBuild(): Promise<string> {
  const deadline = Date.now() + 120_000;
  for (let attempt = 1; ; attempt++) {
    const dir = mkdtempSync(join(tmpdir(), "rms-dashboard-e2e-build-"));
    if (existsSync(dashboardBuild)) cpSync(dashboardBuild, dir, { recursive: true });
    const missing = missingAssets(dir);
    if (missing.length === 0) {
      if (attempt > 1) console.log(`dashboard e2e: the dashboard's build was whole at copy ${attempt}`);
      return dir;
    }
    rmSync(dir, { recursive: true, force: true });
    if (Date.now() > deadline) throw new Error(`apps/dashboard/dist is no whole build (missing ${missing.join(", ")}): run npm run build`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

export interface Stack {
  readonly origin: string;
  readonly secretKey: string;
  readonly accountId: string;
  /** The sign-in link the first start printed. */
  readonly dashboardLink: string;
  readonly output: () => string;
  /** `rms <args>` against this stack (its data directory and core), stdout. */
  rms(args: readonly string[]): Promise<string>;
  /** A call of the public API with the stack's secret key (or `key`), its status and JSON. */
  api(method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; body: Record<string, unknown> }>;
  stop(): Promise<void>;
}

export async function startStack(extraEnv: Record<string, string> = {}): Promise<Stack> {
  const dataDir = mkdtempSync(join(tmpdir(), "rms-dashboard-e2e-"));
  const dashboardDir = await snapshotDashboardBuild();
  const [https, http, core] = [await freePort(), await freePort(), await freePort()];
  const env: Record<string, string | undefined> = {
    ...process.env,
    MONGODB_URI: "",
    RMS_ADMIN_TOKEN: "",
    RMS_DATA_DIR: dataDir,
    PORT: String(https),
    HTTP_PORT: String(http),
    CORE_ADDR: `127.0.0.1:${core}`,
    METRICS_PORT: "0",
    CORE_METRICS_PORT: "0",
    WORKER_METRICS_PORT: "0",
    LOG_LEVEL: "warn",
    DASHBOARD_DIR: dashboardDir,
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_RETRY_SCHEDULE: "1s,2s,3s",
    // The browser tests make a few dozen calls a second with one key at their busiest.
    RATE_LIMIT_TEST: "1000",
    ...extraEnv,
  };
  let output = "";
  const child: ChildProcess = spawn(process.execPath, [rmsBin, "start"], { env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const deadline = Date.now() + 180_000;
  while (!output.includes("rms: ready")) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGTERM");
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(dashboardDir, { recursive: true, force: true });
      throw new Error(`rms start did not become ready:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const secretKey = /\b(sk_test_[0-9A-Za-z]{32})\b/.exec(output)?.[1];
  const accountId = /Created account (acct_[0-9A-Za-z]+)/.exec(output)?.[1];
  const dashboardLink = /(https:\/\/localhost:\d+\/dashboard\/#key=rk_test_[0-9A-Za-z]{32})/.exec(output)?.[1];
  if (!secretKey || !accountId || !dashboardLink) throw new Error(`the first start printed no key, account or dashboard link:\n${output}`);
  const origin = `https://localhost:${https}`;
  const rmsEnv = { ...env, CORE_ADDR: `127.0.0.1:${core}` } as Record<string, string>;
  return {
    origin,
    secretKey,
    accountId,
    dashboardLink,
    output: () => output,
    async rms(args) {
      const { stdout } = await runFile(process.execPath, [rmsBin, ...args], { env: rmsEnv });
      return stdout;
    },
    async api(method, path, body, key = secretKey) {
      const response = await fetch(`${origin}${path}`, {
        method,
        headers: { Authorization: `Bearer ${key}`, ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        // The development certificate is self-signed.
        dispatcher: insecureDispatcher(),
      } as RequestInit);
      return { status: response.status, body: (await response.json().catch(() => ({}))) as Record<string, unknown> };
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(dashboardDir, { recursive: true, force: true });
    },
  };
}

let dispatcher: unknown;
function insecureDispatcher(): unknown {
  return dispatcher;
}

/** Installs the self-signed-certificate dispatcher the API calls use (undici, from the gateway's dev dependencies). */
export async function trustDevelopmentCertificate(): Promise<void> {
  const { Agent } = await import("undici");
  dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
}
