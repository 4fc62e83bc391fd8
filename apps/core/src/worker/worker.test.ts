import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { inject } from "vitest";
import { startWorkerProcess } from "../testutil/process.js";
import { startWorker } from "./run.js";
import type { WorkerContext, WorkerTask } from "./tasks/task.js";

let client: MongoClient;
beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri")).connect();
});
afterAll(() => client.close());

it("runs its tasks with the settings it was given and stops each one before closing the database", async () => {
  const databaseName = testDatabaseName("worker");
  const seen: string[] = [];
  let context: WorkerContext | undefined;
  const task: WorkerTask = {
    name: "probe",
    start(given) {
      context = given;
      seen.push("started");
      return {
        async stop() {
          // Still connected here: a task checkpoints on the way out.
          await given.db.collection("probe").insertOne({ _id: "checkpoint" } as never);
          seen.push("stopped");
        },
      };
    },
  };
  const worker = await startWorker({ mongoUri: inject("mongoUri"), databaseName, tasks: [task], settings: { jobsPerAccount: 5 } });
  expect(context?.workerId).toBe(worker.workerId);
  expect(context?.settings.jobsPerAccount).toBe(5);
  expect(context?.settings.webhookAllowPrivate).toBe(false); // the default for what was not given
  await worker.stop();
  expect(seen).toEqual(["started", "stopped"]);
  expect(await client.db(databaseName).collection("probe").countDocuments()).toBe(1);
  await client.db(databaseName).dropDatabase();
});

it("two worker processes get different lease owner names, and SIGTERM stops each with exit 0", async () => {
  const databaseName = testDatabaseName("worker");
  const [one, two] = await Promise.all([startWorkerProcess(databaseName), startWorkerProcess(databaseName)]);
  expect(one.workerId).not.toBe(two.workerId);
  expect(await one.stop()).toBe(0);
  expect(await two.stop()).toBe(0);
});

it("refuses a bad setting with one line naming the variable", () => {
  const main = fileURLToPath(new URL("../../dist/worker/main.js", import.meta.url));
  const run = spawnSync(process.execPath, [main], {
    env: { PATH: process.env.PATH ?? "", MONGODB_URI: inject("mongoUri"), WEBHOOK_RETRY_SCHEDULE: "soon" },
    encoding: "utf8",
  });
  expect(run.status).toBe(2);
  expect(run.stderr.trim().split("\n")).toEqual([
    `rms-worker: WEBHOOK_RETRY_SCHEDULE delay 1 ("soon") must be a whole number with a unit ms, s, m, h or d, such as 30s`,
  ]);
});
