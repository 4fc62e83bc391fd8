import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { RELEASE } from "@rms/config";
import { eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { expect, inject, it } from "vitest";
import { ADMIN_TOKEN } from "../testutil/harness.js";
import { useTestDatabase } from "../testutil/database.js";
import { MIGRATIONS_COLLECTION, type MigrationRecord } from "./records.js";
import { DEFAULT_BATCH_SIZE } from "./run.js";

const MAIN = fileURLToPath(new URL("../../dist/main.js", import.meta.url));
const t = useTestDatabase("migrations_process");

/** A real core process (the built `rms-core`) over the test's database; its JSON log lines as they come. */
function coreProcess(): { child: ChildProcess; lines: Record<string, unknown>[]; exited: Promise<unknown>; listening: Promise<void> } {
  if (!existsSync(MAIN)) throw new Error("apps/core is not built (run the build first): dist/main.js is missing");
  const child = spawn(process.execPath, [MAIN], {
    env: {
      ...process.env,
      MONGODB_URI: inject("mongoUri"),
      MONGODB_DATABASE: t.databaseName,
      CORE_ADDR: "127.0.0.1:0",
      CORE_METRICS_PORT: "0",
      RMS_ADMIN_TOKEN: ADMIN_TOKEN,
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const lines: Record<string, unknown>[] = [];
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const listening = new Promise<void>((resolve, reject) => {
    void exited.then(() => reject(new Error("core exited before listening")));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        lines.push(entry);
        if (entry["msg"] === "core listening") resolve();
      } catch {
        // not a log line
      }
    });
  });
  listening.catch(() => undefined);
  return { child, lines, exited, listening };
}

const STEP = "0007-resource-name-fields";
const RESOURCES = 40_000;

it("a step resumes where a core SIGKILLed mid-step left it; of two cores started together one runs it", { timeout: 180_000 }, async () => {
  // 40,000 resources as a build before their name fields left them: step 0007 walks them in 80 batches of 500.
  const resources = t.db.collection<{ _id: string }>("resources");
  const created = Math.floor(Date.now() / 1000);
  for (let from = 0; from < RESOURCES; from += 10_000) {
    await resources.insertMany(
      Array.from({ length: 10_000 }, (_, i) => {
        const n = from + i;
        const id = `res_${String(n).padStart(22, "0")}`;
        const tenant = { account: "acct_old", livemode: false };
        return { _id: id, ...tenant, name: `Resource ${n}`, status: "active", metadata: [], created, version: 0, idempotency: id, pending_events: [] };
      }),
    );
  }
  const records = t.db.collection<MigrationRecord>(MIGRATIONS_COLLECTION);
  const record = () => records.findOne({ _id: STEP });

  const first = coreProcess();
  // Killed once its third batch of the step is recorded: mid-step, its lease still held.
  await eventually(async () => expect((await record())?.batches ?? 0).toBeGreaterThanOrEqual(3), { timeoutMs: 120_000, intervalMs: 5 });
  first.child.kill("SIGKILL");
  await first.exited;
  const atKill = (await record())!;
  const convertedAtKill = await resources.countDocuments({ name_lower: { $exists: true } });
  console.log(`killed at batch ${atKill.batches} of the step, after ${String(atKill.position.after)}; ${convertedAtKill} of ${RESOURCES} resources converted`);
  expect(atKill.state).toBe("running");
  expect(convertedAtKill).toBeGreaterThanOrEqual(atKill.batches * DEFAULT_BATCH_SIZE);
  expect(convertedAtKill).toBeLessThan(RESOURCES);
  expect(first.lines.find((line) => line["msg"] === `rms-core ${RELEASE} starting`)).toMatchObject({ release: RELEASE });
  expect(first.lines.some((line) => line["msg"] === "core listening")).toBe(false);

  // Two cores at once: both wait for the dead core's lease to run out; one takes it and resumes, the other waits.
  const began = Date.now();
  const second = coreProcess();
  const third = coreProcess();
  try {
    await Promise.all([second.listening, third.listening]);
    console.log(`both cores listening ${Date.now() - began} ms after they started (the dead core's lease ran out first)`);
    const done = (await record())!;
    // 80 batches of 500 and the empty one that ends the walk, each recorded once: the resumed run began where the
    // killed one's last recorded batch ended (a batch it did without recording it is done again, harmlessly).
    expect(done).toMatchObject({ state: "done", batches: RESOURCES / DEFAULT_BATCH_SIZE + 1, finished_by_release: RELEASE });
    expect(done.runs.map((run) => run.from)).toEqual([{ part: 0, after: null }, atKill.position]);
    expect(done.runs[0]!.owner).toContain(`:${first.child.pid}`);
    const resumer = [second, third].find((core) => done.runs[1]!.owner.endsWith(`:${core.child.pid}`))!;
    const waiter = resumer === second ? third : second;
    expect(resumer.lines.filter((line) => line["msg"] === "migration: resuming").map((line) => line["step"])).toEqual([STEP]);
    expect(waiter.lines.some((line) => line["msg"] === "migration: resuming" || line["msg"] === "migration: starting")).toBe(false);
    expect(waiter.lines.some((line) => line["msg"] === "migrations: waiting for another process's run")).toBe(true);
    expect(await resources.countDocuments({ name_lower: { $exists: true } })).toBe(RESOURCES);
    expect(await resources.findOne({ _id: `res_${String(RESOURCES - 1).padStart(22, "0")}` })).toMatchObject({ name_lower: `resource ${RESOURCES - 1}` });
  } finally {
    for (const core of [second, third]) core.child.kill("SIGTERM");
    await Promise.all([second.exited, third.exited]);
  }
});
