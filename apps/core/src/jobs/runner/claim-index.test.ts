import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { keysPerIndex, winningStages } from "@rms/test-db/testkit";
import { CLAIM_FILTER, CLAIM_INDEX_NAME, CLAIM_SORT, ensureRunnerIndexes } from "./claim.js";
import type { RunnerJob } from "./seam.js";

let client: MongoClient;
let db: Db;
beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri")).connect();
  db = client.db(testDatabaseName("jobs-claim-index"));
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

it("the claim's read is answered from its partial index (no collection scan, no in-memory sort), which holds the unfinished jobs only", async () => {
  const jobs = db.collection<RunnerJob>("jobs");
  await ensureRunnerIndexes(jobs);
  const names = (await jobs.indexes()).map((index) => index.name).sort();
  expect(names).toEqual(["_id_", "run_slot_unique", CLAIM_INDEX_NAME].sort());
  // And the items pages of bulk jobs expire with their job (run.ts).
  expect((await db.collection("job_items").indexes()).find((index) => index.name === "expires_at_ttl")).toMatchObject({ key: { expires_at: 1 }, expireAfterSeconds: 0 });
  const statuses = ["queued", "running", "succeeded", "failed", "canceled"];
  const docs = Array.from({ length: 300 }, (_, i) => ({ _id: `job_${String(i).padStart(4, "0")}`, status: statuses[i % 5]! }));
  await db.collection<{ _id: string; status: string }>("jobs").insertMany(docs);
  const plan = winningStages(await jobs.find(CLAIM_FILTER).sort(CLAIM_SORT).limit(200).explain("queryPlanner"));
  expect(plan).toContain(`IXSCAN(${CLAIM_INDEX_NAME})`);
  expect(plan).not.toContain("COLLSCAN");
  expect(plan).not.toContain("SORT");
  // 120 of the 300 are queued or running: the finished ones are not in the claim's index.
  expect((await keysPerIndex(db, "jobs"))[CLAIM_INDEX_NAME]).toBe(120);
});
