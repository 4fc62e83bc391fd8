import { expect, it } from "vitest";
import { keysPerIndex, winningStages } from "@rms/test-db/testkit";
import { CLAIM_INDEX, CLAIM_INDEX_NAME, ensureRunnerIndexes } from "./claim.js";
import type { RunnerJob } from "./seam.js";
import { useTestDatabase } from "../../testutil/database.js";

const { db } = useTestDatabase("jobs-claim-index");

it("the claim's reads (the running jobs, a tenant's queue head) are answered from its partial index, which holds the unfinished jobs only", async () => {
  const jobs = db.collection<RunnerJob>("jobs");
  await ensureRunnerIndexes(jobs);
  const names = (await jobs.indexes()).map((index) => index.name).sort();
  expect(names).toEqual(["_id_", "run_slot_unique", CLAIM_INDEX_NAME].sort());
  expect((await jobs.indexes()).find((index) => index.name === CLAIM_INDEX_NAME)?.key).toEqual(CLAIM_INDEX);
  // And the items pages of bulk jobs expire (run.ts).
  expect((await db.collection("job_items").indexes()).find((index) => index.name === "expires_at_ttl")).toMatchObject({
    key: { expires_at: 1 },
    expireAfterSeconds: 0,
  });
  const statuses = ["queued", "running", "succeeded", "failed", "canceled"];
  const docs = Array.from({ length: 300 }, (_, i) => ({
    _id: `job_${String(i).padStart(4, "0")}`,
    account: `acct_${i % 7}`,
    livemode: i % 2 === 0,
    status: statuses[i % 5]!,
  }));
  await db.collection<{ _id: string }>("jobs").insertMany(docs);
  for (const query of [
    jobs.find({ status: "running" }).hint(CLAIM_INDEX_NAME),
    jobs.find({ status: "queued" }).sort({ account: 1, livemode: 1, _id: 1 }).limit(1).hint(CLAIM_INDEX_NAME),
    jobs
      .find({ status: "queued", account: { $gt: "acct_3" } })
      .sort({ account: 1, livemode: 1, _id: 1 })
      .limit(1)
      .hint(CLAIM_INDEX_NAME),
    jobs.find({ status: "queued", account: "acct_3", livemode: true }).sort({ account: 1, livemode: 1, _id: 1 }).limit(1).hint(CLAIM_INDEX_NAME),
  ]) {
    const explained = await query.explain("executionStats");
    const plan = winningStages(explained);
    expect(plan).toContain(`IXSCAN(${CLAIM_INDEX_NAME})`);
    expect(plan).not.toContain("COLLSCAN");
    expect(plan).not.toContain("SORT");
    // A head is one key and one document, whatever is queued behind it.
    if (explained.executionStats.nReturned === 1) expect(explained.executionStats.totalDocsExamined).toBe(1);
  }
  // 120 of the 300 are queued or running: the finished ones are not in the claim's index.
  expect((await keysPerIndex(db, "jobs"))[CLAIM_INDEX_NAME]).toBe(120);
});
