// Test-only: the real stack, `rms start` (what `npm start` runs: an embedded MongoDB, core, a worker, the gateway) on
// free ports and a fresh data directory; its first start prints the test-mode secret key the consumer uses.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@rms/test-db";
import { repoRoot } from "./consumer.js";

export interface Stack {
  readonly port: number;
  readonly secretKey: string;
  /** The development certificate and its key (the gateway's; the test's proxy serves with them too). */
  readonly certPath: string;
  readonly cert: string;
  readonly key: string;
  stop(): Promise<void>;
}

export async function startStack(extraEnv: Record<string, string> = {}): Promise<Stack> {
  const dataDir = mkdtempSync(join(tmpdir(), "rms-sdk-e2e-"));
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
    WEBHOOK_ALLOW_PRIVATE: "true",
    WEBHOOK_RETRY_SCHEDULE: "1s,2s,3s",
    ...extraEnv,
  };
  let output = "";
  const child: ChildProcess = spawn(process.execPath, [join(repoRoot, "apps/cli/bin/rms.js"), "start"], { env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 180_000;
  while (!output.includes("rms: ready")) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`rms start did not become ready:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const secretKey = /\b(sk_test_[0-9A-Za-z]{32})\b/.exec(output)?.[1];
  if (!secretKey) {
    await stop();
    throw new Error(`the first start printed no key:\n${output}`);
  }
  const certPath = join(dataDir, "tls", "cert.pem");
  return { port: https, secretKey, certPath, cert: readFileSync(certPath, "utf8"), key: readFileSync(join(dataDir, "tls", "key.pem"), "utf8"), stop };
}
