import { eventually } from "@rms/test-db/testkit";
import { expect, it } from "vitest";
import { useStackWithSecretKey } from "../../testutil/harness.js";
import { finishedJob } from "../../testutil/jobs.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

// The API with a real worker beside it: jobs go from POST to finished, as a client sees them.
const ctx = useStackWithSecretKey({ worker: true });

const finished = (id: string) => finishedJob(ctx, id, 30_000);

it("imports from a bracket-notation form: good items created, a bad item failed alone and listed with its index", async () => {
  const form =
    "type=resources.import&params[items][0][name]=alpha&params[items][0][metadata][__proto__]=p&params[items][1][name]=" +
    "&params[items][2][name]=gamma&params[items][2][status]=paused&params[items][3][name]=delta&params[items][3][status]=sleeping";
  const created = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form });
  expect(created.status).toBe(201);
  const job = await finished(created.json.id);
  expect(job).toMatchObject({
    status: "succeeded",
    progress: { total: 4, processed: 4, failed: 2, skipped: 0 },
    result: { created: 2 },
    failure_code: null,
    failure_message: null,
    cancel_requested_at: null,
  });
  expect(job.started_at).toEqual(expect.any(Number));
  expect(job.finished_at).toEqual(expect.any(Number));
  expect(job.result.errors.map((e: Json) => [e.index, e.code, e.param])).toEqual([
    [1, "parameter_invalid_empty", "name"],
    [3, "parameter_invalid", "status"],
  ]);
  const errors = await ctx.stack.api.get(`/v1/jobs/${job.id}/errors`, { key: ctx.key });
  expect(errors.json).toMatchObject({ object: "list", url: `/v1/jobs/${job.id}/errors`, has_more: false });
  expect(errors.json.data).toEqual(job.result.errors);

  const names = ((await ctx.stack.api.get("/v1/resources", { key: ctx.key })).json.data as Json[]).map((r) => [r.name, r.status, r.metadata]);
  expect(names).toContainEqual(["alpha", "active", JSON.parse('{"__proto__":"p"}')]);
  expect(names).toContainEqual(["gamma", "paused", {}]);

  const event = await eventually(async () => {
    const events = (await ctx.stack.api.get("/v1/events?type=job.succeeded", { key: ctx.key })).json.data as Json[];
    expect(events).toHaveLength(1);
    return events[0]!;
  });
  expect(event.data.object).toEqual(job);
  // Cancel of the finished job is refused.
  expect((await ctx.stack.api.post(`/v1/jobs/${job.id}/cancel`, { key: ctx.key })).json.error.code).toBe("state_conflict");
});

it("bulk-updates by ids[] in a form and bulk-deletes by a JSON filter", async () => {
  const ids: string[] = [];
  for (const name of ["u1", "u2", "u3"])
    ids.push((await ctx.stack.api.post("/v1/resources", { key: ctx.key, form: { name, metadata: { team: "x" } } })).json.id);
  const form = `type=resources.bulk_update&${ids
    .slice(0, 2)
    .map((id) => `params[filter][ids][]=${id}`)
    .join("&")}&params[update][status]=archived&params[update][metadata][team]=&params[update][metadata][done]=yes`;
  const update = await finished((await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form })).json.id);
  expect(update).toMatchObject({ status: "succeeded", progress: { total: 2, processed: 2, failed: 0, skipped: 0 }, result: { updated: 2, errors: [] } });
  for (const id of ids.slice(0, 2)) {
    expect((await ctx.stack.api.get(`/v1/resources/${id}`, { key: ctx.key })).json).toMatchObject({ status: "archived", metadata: { done: "yes" } });
  }
  expect((await ctx.stack.api.get(`/v1/resources/${ids[2]}`, { key: ctx.key })).json).toMatchObject({ status: "active", metadata: { team: "x" } });

  const removal = await finished(
    (await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.bulk_delete", params: { filter: { status: "archived" } } } })).json.id,
  );
  expect(removal).toMatchObject({ status: "succeeded", result: { deleted: 2, errors: [] } });
  for (const id of ids.slice(0, 2)) expect((await ctx.stack.api.get(`/v1/resources/${id}`, { key: ctx.key })).status).toBe(404);
});
