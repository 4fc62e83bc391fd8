import { describe, expect, it } from "vitest";
import { useStackWithDatabase } from "../../testutil/harness.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

const ctx = useStackWithDatabase();

describe("GET /v1/jobs/{id}/errors", () => {
  it("lists a job's item errors by index with index cursors, in the list envelope", async () => {
    const job = (await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { items: [{ name: "" }] } } })).json as Json;
    const errors = [0, 2, 5, 11].map((index) => ({
      _id: `${job.id}:${index}`,
      job: job.id,
      account: ctx.account.id,
      livemode: false,
      index,
      id: null,
      code: "parameter_invalid_empty",
      param: "name",
      message: "empty",
    }));
    await ctx.db.collection("job_errors").insertMany(errors as never[]);
    const page = await ctx.stack.api.get(`/v1/jobs/${job.id}/errors?limit=2`, { key: ctx.key });
    expect(page.status).toBe(200);
    expect(Object.keys(page.json)).toEqual(["object", "url", "has_more", "data"]);
    expect(page.json).toMatchObject({ object: "list", url: `/v1/jobs/${job.id}/errors`, has_more: true });
    expect(page.json.data).toEqual([
      { index: 0, id: null, code: "parameter_invalid_empty", param: "name", message: "empty" },
      { index: 2, id: null, code: "parameter_invalid_empty", param: "name", message: "empty" },
    ]);
    const indexes = async (query: string) =>
      ((await ctx.stack.api.get(`/v1/jobs/${job.id}/errors?${query}`, { key: ctx.key })).json.data as Json[]).map((e) => e.index);
    expect(await indexes("starting_after=2")).toEqual([5, 11]);
    expect(await indexes("ending_before=11&limit=2")).toEqual([2, 5]);
    expect((await ctx.stack.api.get(`/v1/jobs/${job.id}/errors?starting_after=1&ending_before=3`, { key: ctx.key })).json.error.code).toBe("parameter_invalid");
    expect((await ctx.stack.api.get(`/v1/jobs/${job.id}/errors?starting_after=x`, { key: ctx.key })).json.error.param).toBe("starting_after");
  });
});
