import { describe, expect, it } from "vitest";
import { useStackWithDatabase } from "../../testutil/harness.js";
import { OPERATIONS } from "../index.js";
import { JOB_FIELDS, RES_ID, masked } from "../../testutil/jobs.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

const ctx = useStackWithDatabase();

describe("POST /v1/jobs", () => {
  it("queues an import given as a form with bracket notation, the same request as its JSON form (one Idempotency-Key replays across them)", async () => {
    const form =
      "type=resources.import&params[items][0][name]=a&params[items][0][metadata][k]=v&params[items][0][metadata][__proto__]=p" +
      "&params[items][1][name]=b&params[items][1][status]=paused&params[items][2][name]=&params[items][2][metadata][a.b]=1";
    const json = {
      type: "resources.import",
      params: {
        items: [
          { name: "a", metadata: JSON.parse('{"k":"v","__proto__":"p"}') },
          { name: "b", status: "paused" },
          { name: "", metadata: { "a.b": 1 } },
        ],
      },
    };
    const viaForm = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form, headers: { "Idempotency-Key": "import-1" } });
    expect(viaForm.status).toBe(201);
    const job = viaForm.json as Json;
    expect(Object.keys(job)).toEqual(JOB_FIELDS);
    expect(job).toMatchObject({
      object: "job",
      type: "resources.import",
      status: "queued",
      progress: { total: 3, processed: 0, failed: 0, skipped: 0 },
      result: null,
      failure_code: null,
      failure_message: null,
      attempts: 0,
      cancel_requested_at: null,
      livemode: false,
      started_at: null,
      finished_at: null,
    });
    expect(job.id).toMatch(/^job_[0-9A-Za-z]{22}$/);
    // The items became a resources_import file (one item per line): the job shows that file only, never the items.
    expect(job.params).toEqual({ file: expect.stringMatching(/^file_/) });
    expect(Object.keys(job.params)).toEqual(["file"]);

    const viaJson = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json, headers: { "Idempotency-Key": "import-1" } });
    expect(viaJson.status).toBe(201);
    expect(viaJson.headers["idempotent-replayed"]).toBe("true");
    expect(viaJson.text).toBe(viaForm.text);
    expect(await ctx.db.collection("jobs").countDocuments({ account: ctx.account.id })).toBe(1);

    // Without a key, the JSON version makes its own job whose body differs only in id and created.
    const another = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json });
    expect(another.status).toBe(201);
    expect(another.json.id).not.toBe(job.id);
    expect(masked(another.text)).toBe(masked(viaForm.text));

    // The job stores the file id alone (its items are the file's lines: core's tests read them back).
    const stored = await ctx.db.collection("jobs").findOne({ _id: job.id });
    expect(stored?.["params"]).toEqual({ file: job.params.file });

    const reused = await ctx.stack.api.post("/v1/jobs", {
      key: ctx.key,
      json: { ...json, params: { items: [{ name: "other" }] } },
      headers: { "Idempotency-Key": "import-1" },
    });
    expect(reused.status).toBe(400);
    expect(reused.json.error.code).toBe("idempotency_key_reused");
  });

  it("queues a bulk update and a bulk delete from forms (ids[], string integers) and JSON alike", async () => {
    const form =
      `type=resources.bulk_update&params[filter][ids][]=${RES_ID}&params[filter][status]=active&params[filter][metadata][plan]=pro` +
      "&params[filter][created][gte]=1700000000&params[update][status]=archived&params[update][metadata][plan]=";
    const json = {
      type: "resources.bulk_update",
      params: {
        filter: { ids: [RES_ID], status: "active", metadata: { plan: "pro" }, created: { gte: 1700000000 } },
        update: { status: "archived", metadata: { plan: "" } },
      },
    };
    const viaForm = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, form });
    const viaJson = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json });
    expect(viaForm.status).toBe(201);
    expect(viaForm.json.params).toEqual(json.params);
    expect(viaForm.json.progress).toEqual({ total: null, processed: 0, failed: 0, skipped: 0 });
    expect(masked(viaJson.text)).toBe(masked(viaForm.text));

    const indexed = await ctx.stack.api.post("/v1/jobs", {
      key: ctx.key,
      form: `type=resources.bulk_delete&params[filter][ids][0]=${RES_ID}&params[filter][created][lte]=5`,
    });
    expect(indexed.status).toBe(201);
    expect(indexed.json.params).toEqual({ filter: { ids: [RES_ID], created: { lte: 5 } } });
    const clear = await ctx.stack.api.post("/v1/jobs", {
      key: ctx.key,
      form: "type=resources.bulk_update&params[filter][status]=paused&params[update][metadata]=",
    });
    expect(clear.status).toBe(201);
    expect(clear.json.params).toEqual({ filter: { status: "paused" }, update: { metadata: "" } });
  });

  it("takes an import item whose metadata breaks the resource rules (it fails alone when the job runs), and the document's item says no more", async () => {
    const metadata = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, "v".repeat(600)]));
    const created = await ctx.stack.api.post("/v1/jobs", { key: ctx.key, json: { type: "resources.import", params: { items: [{ name: "long", metadata }] } } });
    expect(created.status, created.text).toBe(201);
    // What schemathesis read as a limit the create does not keep: the item's metadata states its type only.
    const create = OPERATIONS.find((o) => o.method === "POST" && o.path === "/v1/jobs")!;
    const shapes = create.parameters["params"]!.schema["anyOf"] as Json[];
    const item = shapes.map((shape) => shape["properties"]?.["items"]?.["items"]).find((found) => found !== undefined) as Json;
    expect(item["properties"]["metadata"]).toMatchObject({ type: "object", additionalProperties: { type: ["string", "number", "boolean"] } });
    expect(JSON.stringify(item)).not.toMatch(/maxLength|maxProperties/);
    // And a bulk update's metadata given empty changes nothing, which the document says as the create does.
    const empty = await ctx.stack.api.post("/v1/jobs", {
      key: ctx.key,
      json: { type: "resources.bulk_update", params: { filter: { status: "archived" }, update: { metadata: {} } } },
    });
    expect([empty.status, empty.json.error?.code]).toEqual([400, "parameter_invalid_empty"]);
    const update = shapes.map((shape) => shape["properties"]?.["update"]).find((found) => found !== undefined) as Json;
    expect(update["properties"]["metadata"]["oneOf"][0]["minProperties"]).toBe(1);
  });
});
