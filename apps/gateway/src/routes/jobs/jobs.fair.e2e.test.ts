import { startWorker } from "@rms/core";
import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

// CONTRACT.md section 6, "Fair sharing", over HTTPS: at most 100 unfinished jobs per account and mode
// (JOBS_QUEUED_PER_ACCOUNT, the default here), and another account's job is not held behind that backlog.
let stack: Stack;
let busy: string;
let other: string;
beforeAll(async () => {
  stack = await startStack();
  busy = (await withSecretKey(stack)).key;
  other = (await withSecretKey(stack)).key;
});
afterAll(async () => {
  await stack?.stop();
});

const small = { type: "resources.import", params: { items: [{ name: "one" }] } };

it("(b) one account queues jobs up to its limit, the next is 400 limit_exceeded in JSON and in a form; another account's small job starts and finishes " +
  "on a worker while that backlog is still queued", async () => {
  for (let i = 0; i < 100; i++) expect((await stack.api.post("/v1/jobs", { key: busy, json: small })).status).toBe(201);
  const overJson = await stack.api.post("/v1/jobs", { key: busy, json: small });
  const overForm = await stack.api.post("/v1/jobs", { key: busy, form: "type=resources.import&params[items][0][name]=one" });
  for (const over of [overJson, overForm]) {
    expect(over.status).toBe(400);
    expect(over.json.error).toMatchObject({ type: "invalid_request_error", code: "limit_exceeded" });
    expect(over.json.error.message).toContain("100 unfinished");
  }
  // Per account and mode: another account is not limited by it.
  const created = await stack.api.post("/v1/jobs", { key: other, json: small });
  expect(created.status).toBe(201);
  const worker = await startWorker({ mongoUri: stack.mongoUri, databaseName: stack.databaseName });
  try {
    const job = await eventually(
      async () => {
        const j = (await stack.api.get(`/v1/jobs/${created.json.id}`, { key: other })).json as Json;
        expect(j.status).toBe("succeeded");
        return j;
      },
      { timeoutMs: 60_000, intervalMs: 20 },
    );
    const queued = (await stack.api.get("/v1/jobs?status=queued&limit=100", { key: busy })).json as Json;
    const stillQueued = queued.data.length;
    console.log(
      `fair jobs e2e (b): the other account's job succeeded ${job.finished_at - job.created} s after its create, with ${stillQueued} of the busy ` +
        `account's 100 jobs still queued`,
    );
    expect(stillQueued).toBeGreaterThan(0);
  } finally {
    await worker.stop();
  }
}, 120_000);
