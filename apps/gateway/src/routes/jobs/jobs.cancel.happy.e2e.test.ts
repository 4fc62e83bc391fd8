import { eventually } from "@rms/test-db/testkit";
import { describe, expect, it } from "vitest";
import { useStackWithDatabase } from "../../testutil/harness.js";
import { setJob } from "../../testutil/jobs.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

const ctx = useStackWithDatabase();

describe("POST /v1/jobs/{id}/cancel", () => {
  const newJob = async () =>
    (await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { items: [{ name: "c" }] } } })).json as Json;

  it("cancels a queued job at once, with its job.canceled event; a second cancel is 409", async () => {
    const job = await newJob();
    const canceled = await ctx.stack.api.post(`/v1/jobs/${job.id}/cancel`, { key: ctx.key });
    expect(canceled.status).toBe(200);
    expect(canceled.json).toMatchObject({ id: job.id, status: "canceled", result: { created: 0, errors: [] } });
    expect(canceled.json.finished_at).toBeGreaterThanOrEqual(job.created);
    expect((await ctx.stack.api.get(`/v1/jobs/${job.id}`, { key: ctx.key })).text).toBe(canceled.text);

    const event = await eventually(async () => {
      const events = (await ctx.stack.api.get("/v1/events?type=job.canceled", { key: ctx.key })).json.data as Json[];
      const found = events.find((e) => e.data.object.id === job.id);
      expect(found).toBeDefined();
      return found!;
    });
    expect(event.data.object).toEqual(canceled.json);

    const again = await ctx.stack.api.post(`/v1/jobs/${job.id}/cancel`, { key: ctx.key });
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ type: "invalid_request_error", code: "state_conflict" });
  });

  it("marks a running job with cancel_requested_at once (a second cancel keeps the first time) and leaves it running", async () => {
    const job = await newJob();
    await setJob(ctx.db, job.id, { status: "running", started_at: job.created, lease_owner: "worker-x", lease_until: Date.now() + 60_000, epoch: 1 });
    const first = await ctx.stack.api.post(`/v1/jobs/${job.id}/cancel`, { key: ctx.key });
    expect(first.status).toBe(200);
    expect(first.json.status).toBe("running");
    expect(first.json.cancel_requested_at).toEqual(expect.any(Number));
    await setJob(ctx.db, job.id, { cancel_requested_at: 1_000 }); // an earlier time, so a rewrite would show
    const second = await ctx.stack.api.post(`/v1/jobs/${job.id}/cancel`, { key: ctx.key });
    expect(second.json).toMatchObject({ status: "running", cancel_requested_at: 1_000 });
    const stored = await ctx.db.collection("jobs").findOne({ _id: job.id });
    expect(stored).toMatchObject({ lease_owner: "worker-x", epoch: 1, status: "running" });
  });
});
