// A core started while its database does not answer (a rolling upgrade that meets an election, a partition, a
// database restarted after the service): it waits and serves once the database answers, without exiting.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { freePort, startDatabase, type RunningDatabase } from "@rms/test-db";
import { afterEach, expect, it } from "vitest";
import { ADMIN_TOKEN } from "./testutil/harness.js";

const MAIN = fileURLToPath(new URL("../dist/main.js", import.meta.url));
const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

it("serves once a database that did not answer at its start answers, without exiting", async () => {
  if (!existsSync(MAIN)) throw new Error("apps/core is not built (run the build first): dist/main.js is missing");
  const port = await freePort();
  const child = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env["PATH"] ?? "",
      MONGODB_URI: `mongodb://127.0.0.1:${port}/?replicaSet=rs0`,
      MONGODB_DATABASE: "start_outage",
      CORE_ADDR: "127.0.0.1:0",
      CORE_METRICS_PORT: "0",
      RMS_ADMIN_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  stops.push(() => void child.kill("SIGKILL"));
  const messages: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const logged = (message: RegExp) =>
    new Promise<void>((resolve, reject) => {
      void exited.then((code) => reject(new Error(`core exited (${code}) before logging ${message}: ${messages.join(" | ")}`)));
      const look = () => (messages.some((m) => message.test(m)) ? resolve() : setTimeout(look, 100));
      look();
    });
  createInterface({ input: child.stdout! }).on("line", (line) => {
    try {
      messages.push(String((JSON.parse(line) as { msg?: string }).msg));
    } catch {
      // not a log line
    }
  });

  // Its first look at the database fails: nothing listens there yet.
  await logged(/: database unavailable; retrying$/);
  const database: RunningDatabase = await startDatabase({ port, env: { ...process.env, MONGODB_URI: "" }, skip: ["external", "testcontainers"] });
  stops.push(() => database.stop());
  await logged(/^core listening$/);
  expect(child.exitCode).toBeNull();
}, 120_000);
