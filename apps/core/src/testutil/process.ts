import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";
import type {} from "@rms/test-db/vitest-setup";
import { ADMIN_TOKEN } from "./harness.js";

const MAIN = fileURLToPath(new URL("../../dist/main.js", import.meta.url));

/**
 * A real core process (the built `rms-core`) on a free port over the given database,
 * for tests that need several processes sharing one database.
 */
export async function startCoreProcess(databaseName: string): Promise<{ address: string; stop(): Promise<void> }> {
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
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const address = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`core process exited (${code}) before listening`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; address?: string };
        if (entry.msg === "core listening" && entry.address) resolve(entry.address);
      } catch {
        // not a log line
      }
    });
  });
  return {
    address,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}
