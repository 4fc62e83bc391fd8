import { describe, expect, it } from "vitest";
import { toForm } from "../../testutil/client.js";
import { useStackWithDatabase } from "../../testutil/harness.js";
import { RES_ID, masked, setJob } from "../../testutil/jobs.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

const ctx = useStackWithDatabase();

describe("POST /v1/jobs", () => {
  it("accepts 10,000 items and 1,000 ids, refuses one more of either", async () => {
    const items = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `item ${i}` }));
    const ok = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { items: items(10_000) } } });
    expect(ok.status).toBe(201);
    expect(ok.json.progress.total).toBe(10_000);
    // The same in a form (indexed bracket notation) is refused: a form body holds at most 2,000 parameters, JSON
    // is the encoding for long imports (docs/decisions.md). Up to the ceiling, the form and JSON are one request.
    const itemsForm = (n: number) =>
      `type=resources.import&${items(n)
        .map((item, i) => `params[items][${i}][name]=${encodeURIComponent(item.name)}`)
        .join("&")}`;
    const viaForm = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form: itemsForm(10_000) });
    expect(viaForm.status).toBe(400);
    expect(viaForm.json.error).toMatchObject({
      code: "parameter_invalid",
      message: expect.stringMatching(/^Too many parameters for a form-encoded body: at most 2000\. .*application\/json/),
    });
    const atCeiling = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form: itemsForm(1_999) });
    expect(atCeiling.status).toBe(201);
    const sameAsJson = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { items: items(1_999) } } });
    expect(masked(atCeiling.text)).toBe(masked(sameAsJson.text));
    const tooMany = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { items: items(10_001) } } });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.error).toMatchObject({ code: "parameter_invalid", param: "params[items]" });

    const ids = (n: number) => Array.from({ length: n }, (_, i) => `res_${String(i).padStart(22, "0")}`);
    const form = (n: number) =>
      `type=resources.bulk_delete&${ids(n)
        .map((id) => `params[filter][ids][]=${id}`)
        .join("&")}`;
    expect((await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form: form(1_000) })).status).toBe(201);
    // A form list longer than 1,000 is refused by the form decoder (lists stay within 1,000 there), JSON by core's rule.
    const overIdsForm = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form: form(1_001) });
    expect(overIdsForm.status).toBe(400);
    expect(overIdsForm.json.error.code).toBe("parameter_invalid");
    const overIds = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.bulk_delete", params: { filter: { ids: ids(1_001) } } } });
    expect(overIds.status).toBe(400);
    expect(overIds.json.error).toMatchObject({ code: "parameter_invalid", param: "params[filter][ids]" });
  });

  const bad: [string, unknown, string, string][] = [
    ["no type", { params: { items: [{ name: "a" }] } }, "parameter_missing", "type"],
    ["unknown type", { type: "resources.explode", params: {} }, "parameter_invalid", "type"],
    ["no params", { type: "resources.import" }, "parameter_missing", "params"],
    ["params not an object", { type: "resources.import", params: "x" }, "parameter_invalid", "params"],
    ["unknown params field", { type: "resources.import", params: { items: [{ name: "a" }], extra: 1 } }, "parameter_unknown", "params[extra]"],
    ["no file or items", { type: "resources.import", params: {} }, "parameter_missing", "params[file]"],
    ["empty items", { type: "resources.import", params: { items: [] } }, "parameter_invalid_empty", "params[items]"],
    ["item not an object", { type: "resources.import", params: { items: ["a"] } }, "parameter_invalid", "params[items][0]"],
    ["unknown item field", { type: "resources.import", params: { items: [{ name: "a", colour: "red" }] } }, "parameter_unknown", "params[items][0][colour]"],
    ["item name not a string", { type: "resources.import", params: { items: [{ name: "a" }, { name: 5 }] } }, "parameter_invalid", "params[items][1][name]"],
    [
      "item metadata value null",
      { type: "resources.import", params: { items: [{ name: "a", metadata: { k: null } }] } },
      "metadata_invalid",
      "params[items][0][metadata][k]",
    ],
    ["no filter", { type: "resources.bulk_delete", params: {} }, "parameter_missing", "params[filter]"],
    ["empty filter", { type: "resources.bulk_delete", params: { filter: {} } }, "parameter_invalid_empty", "params[filter]"],
    ["unknown filter field", { type: "resources.bulk_delete", params: { filter: { name: "a" } } }, "parameter_unknown", "params[filter][name]"],
    ["bad filter status", { type: "resources.bulk_delete", params: { filter: { status: "gone" } } }, "parameter_invalid", "params[filter][status]"],
    ["malformed id", { type: "resources.bulk_delete", params: { filter: { ids: [RES_ID, "job_x"] } } }, "parameter_invalid", "params[filter][ids][1]"],
    ["empty ids", { type: "resources.bulk_delete", params: { filter: { ids: [] } } }, "parameter_invalid_empty", "params[filter][ids]"],
    [
      "unknown created bound",
      { type: "resources.bulk_delete", params: { filter: { created: { since: 1 } } } },
      "parameter_unknown",
      "params[filter][created][since]",
    ],
    [
      "created not an integer",
      { type: "resources.bulk_delete", params: { filter: { created: { gte: "soon" } } } },
      "parameter_invalid",
      "params[filter][created][gte]",
    ],
    [
      "empty metadata filter value",
      { type: "resources.bulk_delete", params: { filter: { metadata: { k: "" } } } },
      "parameter_invalid_empty",
      "params[filter][metadata][k]",
    ],
    [
      "metadata filter key with brackets",
      { type: "resources.bulk_delete", params: { filter: { metadata: { "a[b]": "1" } } } },
      "metadata_invalid",
      "params[filter][metadata][a[b]]",
    ],
    ["no update", { type: "resources.bulk_update", params: { filter: { status: "active" } } }, "parameter_missing", "params[update]"],
    ["empty update", { type: "resources.bulk_update", params: { filter: { status: "active" }, update: {} } }, "parameter_invalid_empty", "params[update]"],
    [
      "update of name",
      { type: "resources.bulk_update", params: { filter: { status: "active" }, update: { name: "x" } } },
      "parameter_unknown",
      "params[update][name]",
    ],
    [
      "bad update status",
      { type: "resources.bulk_update", params: { filter: { status: "active" }, update: { status: "" } } },
      "parameter_invalid_empty",
      "params[update][status]",
    ],
    [
      "update metadata value too long",
      { type: "resources.bulk_update", params: { filter: { status: "active" }, update: { metadata: { k: "x".repeat(501) } } } },
      "metadata_invalid",
      "params[update][metadata][k]",
    ],
  ];
  it.each(bad)("refuses %s with 400 and queues nothing", async (_label, body, code, param) => {
    const before = await ctx.db.collection("jobs").countDocuments();
    const response = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: body });
    expect(response.status).toBe(400);
    expect(response.json.error).toMatchObject({ type: "invalid_request_error", code, param });
    expect(await ctx.db.collection("jobs").countDocuments()).toBe(before);
  });

  // CONTRACT.md section 3, "The filter model": the same mistake in a job's filter (JSON or form) and in the
  // list's query string gets the same code, its param named where it sits.
  const filterMistakes: [string, Json, string, string][] = [
    ["an unknown status", { status: "gone" }, "parameter_invalid", "status"],
    ["an unknown second status", { status: ["active", "gone"] }, "parameter_invalid", "status[1]"],
    ["an unknown created bound", { created: { after: 1 } }, "parameter_unknown", "created[after]"],
    ["a created bound not an integer", { created: { gte: "soon" } }, "parameter_invalid", "created[gte]"],
    ["a malformed id", { ids: [RES_ID, "job_x"] }, "parameter_invalid", "ids[1]"],
    ["an empty metadata value", { metadata: { k: "" } }, "parameter_invalid_empty", "metadata[k]"],
    ["a metadata key of 41 characters", { metadata: { ["k".repeat(41)]: "1" } }, "metadata_invalid", `metadata[${"k".repeat(41)}]`],
  ];
  it.each(filterMistakes)("refuses %s in a job's filter (JSON and form) as the list refuses it", async (_label, filter, code, param) => {
    const body = { type: "resources.bulk_delete", params: { filter } };
    const viaJson = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: body });
    const viaForm = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form: toForm(body) });
    const listed = await ctx.stack.api.get(`/v1/resources?${toForm(filter)}`, { key: ctx.key });
    // `metadata[k]` sits at `params[filter][metadata][k]`.
    const at = param.indexOf("[");
    const jobParam = at === -1 ? `params[filter][${param}]` : `params[filter][${param.slice(0, at)}]${param.slice(at)}`;
    expect(viaJson.json.error).toMatchObject({ code, param: jobParam });
    const withoutId = (text: string) => text.replace(/"request_id":"req_\w+"/, "");
    expect(withoutId(viaForm.text)).toBe(withoutId(viaJson.text));
    expect(listed.json.error).toMatchObject({ code, param });
  });

  it("takes several statuses, up to 5 metadata keys and every created bound in both encodings, echoed as given", async () => {
    const filter = {
      status: ["paused", "archived"],
      metadata: { a: "1", b: "2", c: "3", d: "4", e: "5" },
      created: { gt: 1, gte: 2, lt: 9_000_000_000, lte: 9_000_000_001 },
    };
    const body = { type: "resources.bulk_delete", params: { filter } };
    const viaJson = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: body });
    expect(viaJson.status).toBe(201);
    expect(viaJson.json.params.filter).toEqual(filter);
    const viaForm = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form: toForm(body) });
    expect(masked(viaForm.text)).toBe(masked(viaJson.text));
    const six = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { ...body, params: { filter: { metadata: { ...filter.metadata, f: "6" } } } } });
    expect(six.json.error).toMatchObject({ code: "parameter_invalid", param: "params[filter][metadata]" });
  });

  it("keeps the API's 1,000-parameter limit everywhere else", async () => {
    const form = Array.from({ length: 1_001 }, (_, i) => `metadata[k${i}]=v`).join("&");
    const response = await ctx.stack.api.post("/v1/resources", { key: ctx.key, form: `name=a&${form}` });
    expect(response.status).toBe(400);
    expect(response.json.error.code).toBe("parameter_invalid");
  });

  it("names nested params in form requests too", async () => {
    const response = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form: "type=resources.import&params[items][0][name]=a&params[items][2][name]=b" });
    expect(response.status).toBe(400);
    expect(response.json.error).toMatchObject({ code: "parameter_invalid", param: "params[items]" });
    const unknown = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form: "type=resources.import&params[items][0][nme]=a" });
    expect(unknown.json.error).toMatchObject({ code: "parameter_unknown", param: "params[items][0][nme]" });
  });
});

describe("POST /v1/jobs/{id}/cancel", () => {
  const newJob = async () =>
    (await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { items: [{ name: "c" }] } } })).json as Json;

  it.each(["succeeded", "failed", "canceled"])("refuses to cancel a %s job with 409 state_conflict", async (status) => {
    const job = await newJob();
    await setJob(ctx.db, job.id, { status, finished_at: job.created });
    const response = await ctx.stack.api.post(`/v1/jobs/${job.id}/cancel`, { key: ctx.key, headers: { "Idempotency-Key": `cancel-${status}` } });
    expect(response.status).toBe(409);
    expect(response.json.error.code).toBe("state_conflict");
    expect((await ctx.stack.api.get(`/v1/jobs/${job.id}`, { key: ctx.key })).json.status).toBe(status);
    // The refusal came from executing the request: a retry with the key replays it.
    const replay = await ctx.stack.api.post(`/v1/jobs/${job.id}/cancel`, { key: ctx.key, headers: { "Idempotency-Key": `cancel-${status}` } });
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(replay.text).toBe(response.text);
  });
});
