import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
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

/** Every stage of a plan, depth first. */
function stages(plan: Record<string, unknown>): Record<string, unknown>[] {
  const children = [plan["inputStage"], ...((plan["inputStages"] as unknown[] | undefined) ?? [])].filter(Boolean) as Record<string, unknown>[];
  return [plan, ...children.flatMap(stages)];
}

it("the claim's read has its compound index (answered from it: no collection scan, no in-memory sort)", async () => {
  const jobs = db.collection<RunnerJob>("jobs");
  await ensureRunnerIndexes(jobs);
  const names = (await jobs.indexes()).map((index) => index.name).sort();
  expect(names).toEqual(["_id_", "run_slot_unique", CLAIM_INDEX_NAME].sort());
  const docs = Array.from({ length: 300 }, (_, i) => ({ _id: `job_${String(i).padStart(4, "0")}`, status: i % 10 === 0 ? "queued" : "succeeded" }));
  await db.collection<{ _id: string; status: string }>("jobs").insertMany(docs);
  const explained = await jobs.find(CLAIM_FILTER).sort(CLAIM_SORT).limit(200).explain("queryPlanner");
  const plan = stages((explained["queryPlanner"] as { winningPlan: Record<string, unknown> }).winningPlan);
  expect(plan.filter((s) => s["stage"] === "IXSCAN").map((s) => s["indexName"])).toContain(CLAIM_INDEX_NAME);
  expect(plan.map((s) => s["stage"])).not.toContain("COLLSCAN");
  expect(plan.map((s) => s["stage"])).not.toContain("SORT");
});
