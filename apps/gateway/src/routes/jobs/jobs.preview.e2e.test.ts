import { describe, expect, it } from "vitest";
import { OPERATIONS } from "../../app.js";
import { openApiDocument } from "../../openapi.js";
import { useStackWithDatabase, withSecretKey } from "../../testutil/harness.js";

// POST /v1/jobs with validate_only=true (CONTRACT.md section 6, "Dry run"): a job_preview, nothing created.

const ctx = useStackWithDatabase();

const PREVIEW_FIELDS = ["object", "type", "livemode", "total", "sample", "errors", "total_is_lower_bound"];

/** Everything a created job would leave: the job, its queue signal, its items, its events. */
async function footprint(accountId: string) {
  return {
    jobs: await ctx.db.collection("jobs").countDocuments({ account: accountId }),
    queued: (await ctx.db.collection("jobs_queue").findOne({}))?.["queued"] ?? 0,
    items: await ctx.db.collection("job_items").countDocuments({}),
    jobEvents: await ctx.db.collection("events").countDocuments({ account: accountId, type: { $regex: "^job\\." } }),
  };
}

describe("POST /v1/jobs with validate_only=true", () => {
  it("previews a bulk update: total and the first 10 matches in id order, byte-identical from a form and from JSON; creates nothing", async () => {
    const { key: own, account: owner } = await withSecretKey(ctx.stack);
    const made: string[] = [];
    for (let i = 0; i < 13; i++) {
      const created = await ctx.stack.api.post("/v1/resources", { key: own, json: { name: `r${i}`, metadata: { plan: i < 12 ? "pro" : "free" } } });
      made.push(created.json.id);
    }
    // One of the matches is deleted: a preview counts what matches now.
    expect((await ctx.stack.api.delete(`/v1/resources/${made[4]}`, { key: own })).status).toBe(200);
    const before = await footprint(owner.id);

    const form = "type=resources.bulk_update&params[filter][metadata][plan]=pro&params[update][status]=archived&validate_only=true";
    const json = { type: "resources.bulk_update", params: { filter: { metadata: { plan: "pro" } }, update: { status: "archived" } }, validate_only: true };
    const viaForm = await ctx.stack.api.post("/v1/jobs", { key: own, form });
    const viaJson = await ctx.stack.api.post("/v1/jobs", { key: own, json });
    expect(viaForm.status).toBe(200);
    expect(viaJson.status).toBe(200);
    expect(viaJson.text).toBe(viaForm.text);
    const matches = made.slice(0, 12).filter((_, i) => i !== 4);
    expect(viaForm.json).toEqual({
      object: "job_preview",
      type: "resources.bulk_update",
      livemode: false,
      total: 11,
      sample: [...matches].sort().slice(0, 10),
      errors: [],
      total_is_lower_bound: false,
    });
    expect(Object.keys(viaForm.json)).toEqual(PREVIEW_FIELDS);

    // No job in the list, no job event, nothing queued, no items snapshot.
    expect((await ctx.stack.api.get("/v1/jobs", { key: own })).json.data).toEqual([]);
    expect((await ctx.stack.api.get("/v1/events?type=job.*", { key: own })).json.data).toEqual([]);
    expect(await footprint(owner.id)).toEqual(before);
    // And nothing changed: the matches are still active.
    expect((await ctx.stack.api.get(`/v1/resources/${matches[0]}`, { key: own })).json.status).toBe("active");
  });

  it("previews an import: the item count and the items that would fail (as result.errors shows them), in both encodings", async () => {
    const items = [
      { name: "ok" },
      { name: "" },
      { name: "x".repeat(201) },
      { name: "fine", status: "paused" },
      { name: "bad", status: "gone" },
      { metadata: { k: "v" } },
    ];
    // A form's "true", here in JSON too: both encodings take the text form of a boolean.
    const json = { type: "resources.import", params: { items }, validate_only: "true" };
    const form =
      "type=resources.import&validate_only=true&params[items][0][name]=ok&params[items][1][name]=&params[items][2][name]=" +
      `${"x".repeat(201)}&params[items][3][name]=fine&params[items][3][status]=paused&params[items][4][name]=bad&params[items][4][status]=gone` +
      "&params[items][5][metadata][k]=v";
    const viaJson = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json });
    const viaForm = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form });
    expect(viaJson.status).toBe(200);
    expect(viaForm.text).toBe(viaJson.text);
    expect(viaJson.json).toMatchObject({ object: "job_preview", type: "resources.import", livemode: false, total: 6, sample: [] });
    expect(viaJson.json.errors.map((e: { index: number; id: null; code: string; param: string }) => [e.index, e.id, e.code, e.param])).toEqual([
      [1, null, "parameter_invalid_empty", "name"],
      [2, null, "string_too_long", "name"],
      [4, null, "parameter_invalid", "status"],
      [5, null, "parameter_missing", "name"],
    ]);
    expect(Object.keys(viaJson.json.errors[0])).toEqual(["index", "line", "id", "code", "param", "message"]);
    expect(await ctx.db.collection("jobs").countDocuments({ account: ctx.account.id })).toBe(0);
    expect(await ctx.db.collection("resources").countDocuments({ account: ctx.account.id })).toBe(0);
  });

  it("checks the params exactly as a create does: the same 400 for the same bad job; validate_only=false is a create", async () => {
    const bad = { type: "resources.bulk_delete", params: { filter: {} } };
    const created = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: bad });
    const previewed = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { ...bad, validate_only: true } });
    expect(previewed.status).toBe(400);
    expect(previewed.json.error).toEqual({ ...created.json.error, request_id: previewed.json.error.request_id });
    expect(previewed.json.error).toMatchObject({ code: "parameter_invalid_empty", param: "params[filter]" });
    const unknownItemField = await ctx.stack.api.post("/v1/jobs", {
      key: ctx.key,
      form: "type=resources.import&validate_only=true&params[items][0][colour]=red",
    });
    expect(unknownItemField.json.error).toMatchObject({ code: "parameter_unknown", param: "params[items][0][colour]" });
    const notBoolean = await ctx.stack.api.post("/v1/jobs", {
      key: ctx.key,
      json: { type: "resources.import", params: { items: [{ name: "a" }] }, validate_only: "yes" },
    });
    expect(notBoolean.status).toBe(400);
    expect(notBoolean.json.error).toMatchObject({ code: "parameter_invalid", param: "validate_only" });
    expect(await ctx.db.collection("jobs").countDocuments({ account: ctx.account.id })).toBe(0);

    const real = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form: "type=resources.import&params[items][0][name]=a&validate_only=false" });
    expect(real.status).toBe(201);
    expect(real.json.object).toBe("job");
  });

  it("under an Idempotency-Key records the preview answer like any other: replayed byte for byte, and the key is not a create's", async () => {
    const { key: own, account: owner } = await withSecretKey(ctx.stack);
    const request = { type: "resources.import", params: { items: [{ name: "a" }, { name: "" }] } };
    const headers = { "Idempotency-Key": "preview-1" };
    const first = await ctx.stack.api.post("/v1/jobs", { key: own, json: { ...request, validate_only: true }, headers });
    const again = await ctx.stack.api.post("/v1/jobs", {
      key: own,
      form: "type=resources.import&params[items][0][name]=a&params[items][1][name]=&validate_only=true",
      headers,
    });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.text).toBe(first.text);
    const create = await ctx.stack.api.post("/v1/jobs", { key: own, json: request, headers });
    expect(create.status).toBe(400);
    expect(create.json.error.code).toBe("idempotency_key_reused");
    expect(await ctx.db.collection("jobs").countDocuments({ account: owner.id })).toBe(0);
  });

  it("needs jobs:write, like a create", async () => {
    const owner = await ctx.stack.newAccount();
    const preview = (k: string) =>
      ctx.stack.api.post("/v1/jobs", { key: k, json: { type: "resources.import", params: { items: [{ name: "s" }] }, validate_only: true } });
    const writer = (await owner.key("restricted", "test", { scopes: ["jobs:write"] })).secret;
    const reader = (await owner.key("restricted", "test", { scopes: ["jobs:read", "resources:read"] })).secret;
    const publishable = (await owner.key("publishable")).secret;
    expect((await preview(writer)).status).toBe(200);
    expect((await preview(reader)).json.error).toMatchObject({ type: "permission_error", code: "insufficient_scope" });
    expect((await preview(publishable)).json.error.code).toBe("publishable_key_read_only");
    // A live key previews its own mode.
    const live = (await owner.key("secret", "live")).secret;
    expect((await preview(live)).json.livemode).toBe(true);
  });

  it("is documented: a 200 job_preview beside the 201 job, and the validate_only parameter", () => {
    // biome-ignore lint/suspicious/noExplicitAny: the document as JSON; each assertion states the shape it expects.
    const doc = openApiDocument(OPERATIONS) as unknown as { paths: Record<string, any>; components: { schemas: Record<string, any> } };
    const post = doc.paths["/v1/jobs"].post;
    expect(post.responses["201"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Job" });
    expect(post.responses["200"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/JobPreview" });
    const schema = doc.components.schemas["JobPreview"];
    expect(Object.keys(schema.properties)).toEqual(PREVIEW_FIELDS);
    expect(schema.required).toEqual(PREVIEW_FIELDS);
    expect(schema.properties.object).toEqual({ type: "string", const: "job_preview" });
    expect(schema.properties.errors.items).toEqual({ $ref: "#/components/schemas/JobItemError" });
    for (const type of ["application/json", "application/x-www-form-urlencoded"]) {
      expect(post.requestBody.content[type].schema.properties.validate_only).toMatchObject({ type: "boolean", default: false });
    }
  });
});
