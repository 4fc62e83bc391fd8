import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";
import type {} from "@rms/test-db/vitest-setup";
import { ADMIN_TOKEN } from "./harness.js";

const MAIN = fileURLToPath(new URL("../../dist/main.js", import.meta.url));

/** A real core process and what it said: its log lines (JSON, parsed) as they come. */
export interface CoreProcess {
  readonly address: string;
  /** Its `/metrics` port on 127.0.0.1. */
  readonly metricsPort: number;
  readonly child: ChildProcess;
  /** Every log line so far. */
  lines(): readonly Record<string, unknown>[];
  stop(): Promise<void>;
}

/**
 * A real core process (the built `rms-core`) on a free port over the given database, for tests that need several
 * processes sharing one database, or a process to signal; `env` adds to or overrides its variables.
 */
export async function startCoreProcess(databaseName: string, env: Record<string, string> = {}): Promise<CoreProcess> {
  if (!existsSync(MAIN)) throw new Error("apps/core is not built (run the build first): dist/main.js is missing");
  const child: ChildProcess = spawn(process.execPath, [MAIN], {
    env: {
      ...process.env,
      MONGODB_URI: inject("mongoUri"),
      MONGODB_DATABASE: databaseName,
      CORE_ADDR: "127.0.0.1:0",
      CORE_METRICS_PORT: "0",
      RMS_ADMIN_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: "info",
      ...env,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines: Record<string, unknown>[] = [];
  const { address, metricsPort } = await new Promise<{ address: string; metricsPort: number }>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`core process exited (${code}) before listening`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      let entry: { msg?: string; address?: string; metrics_port?: number };
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        return; // not a log line
      }
      lines.push(entry);
      if (entry.msg === "core listening" && entry.address) resolve({ address: entry.address, metricsPort: entry.metrics_port ?? 0 });
    });
  });
  return {
    address,
    metricsPort,
    child,
    lines: () => lines,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

const WORKER_MAIN = fileURLToPath(new URL("../../dist/worker/main.js", import.meta.url));

/** A real worker process (the built worker entry) over the given database, for kill and takeover tests; its /metrics on a free port. */
export async function startWorkerProcess(
  databaseName: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; workerId: string; metricsPort: number; stop(): Promise<number | null>; kill(): Promise<void> }> {
  if (!existsSync(WORKER_MAIN)) throw new Error("apps/core is not built (run the build first): dist/worker/main.js is missing");
  const child: ChildProcess = spawn(process.execPath, [WORKER_MAIN], {
    env: { ...process.env, MONGODB_URI: inject("mongoUri"), MONGODB_DATABASE: databaseName, LOG_LEVEL: "info", WORKER_METRICS_PORT: "0", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const { workerId, metricsPort } = await new Promise<{ workerId: string; metricsPort: number }>((resolve, reject) => {
    void exited.then((code) => reject(new Error(`worker process exited (${code}) before running`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; worker?: string; metrics_port?: number };
        if (entry.msg === "worker running" && entry.worker) resolve({ workerId: entry.worker, metricsPort: entry.metrics_port ?? 0 });
      } catch {
        // not a log line
      }
    });
  });
  return {
    child,
    workerId,
    metricsPort,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}
