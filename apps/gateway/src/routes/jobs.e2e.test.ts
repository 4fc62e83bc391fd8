import { eventually } from "@rms/test-db/testkit";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../testutil/harness.js";

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

let stack: Stack;
let key: string;
let account: Awaited<ReturnType<typeof withSecretKey>>["account"];
let mongo: MongoClient;
let db: Db;
beforeAll(async () => {
  stack = await startStack();
  ({ key, account } = await withSecretKey(stack));
  mongo = new MongoClient(stack.mongoUri);
  db = mongo.db(stack.databaseName);
});
afterAll(async () => {
  await mongo?.close();
  await stack?.stop();
});

const JOB_FIELDS = [
  "id",
  "object",
  "type",
  "status",
  "params",
  "progress",
  "result",
  "error",
  "attempts",
  "cancel_requested_at",
  "livemode",
  "created",
  "started_at",
  "finished_at",
];
const RES_ID = "res_0000000000000000000000";

/** The body with the fields that differ between two jobs of one request (id, created) masked. */
const masked = (text: string) => text.replace(/"id":"job_[0-9A-Za-z]{22}"/, '"id":"job_x"').replace(/"created":\d+/, '"created":0');

/** Moves a job to a state only the runner reaches (the runner is not part of this stack). */
async function setJob(id: string, fields: Record<string, unknown>) {
  await db.collection("jobs").updateOne({ _id: id as never }, { $set: fields });
}

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
    const viaForm = await stack.api.post("/v1/jobs", { key, form, headers: { "Idempotency-Key": "import-1" } });
    expect(viaForm.status).toBe(201);
    const job = viaForm.json as Json;
    expect(Object.keys(job)).toEqual(JOB_FIELDS);
    expect(job).toMatchObject({
      object: "job",
      type: "resources.import",
      status: "queued",
      progress: { total: 3, processed: 0, failed: 0, skipped: 0 },
      result: null,
      error: null,
      attempts: 0,
      cancel_requested_at: null,
      livemode: false,
      started_at: null,
      finished_at: null,
    });
    expect(job.id).toMatch(/^job_[0-9A-Za-z]{22}$/);
    // Keys are data: "__proto__" and "a.b" come back as keys; the number 1 as its string form. The empty name is the item's
    // problem when the job runs, not the job's.
    expect(viaForm.text).toContain('"params":{"items":[{"name":"a","metadata":{"k":"v","__proto__":"p"}},{"name":"b","status":"paused"},{"name":"","metadata":{"a.b":"1"}}]}');

    const viaJson = await stack.api.post("/v1/jobs", { key, json, headers: { "Idempotency-Key": "import-1" } });
    expect(viaJson.status).toBe(201);
    expect(viaJson.headers["idempotent-replayed"]).toBe("true");
    expect(viaJson.text).toBe(viaForm.text);
    expect(await db.collection("jobs").countDocuments({ account: account.id })).toBe(1);

    // Without a key, the JSON version makes its own job whose body differs only in id and created.
    const another = await stack.api.post("/v1/jobs", { key, json });
    expect(another.status).toBe(201);
    expect(another.json.id).not.toBe(job.id);
    expect(masked(another.text)).toBe(masked(viaForm.text));

    // Stored metadata is pairs: no user key became a field name.
    const stored = await db.collection("jobs").findOne({ _id: job.id });
    expect(stored?.["params"].items[0].metadata).toEqual([
      { k: "k", v: "v" },
      { k: "__proto__", v: "p" },
    ]);

    const reused = await stack.api.post("/v1/jobs", { key, json: { ...json, params: { items: [{ name: "other" }] } }, headers: { "Idempotency-Key": "import-1" } });
    expect(reused.status).toBe(400);
    expect(reused.json.error.code).toBe("idempotency_key_reused");
  });

  it("queues a bulk update and a bulk delete from forms (ids[], string integers) and JSON alike", async () => {
    const form = `type=resources.bulk_update&params[filter][ids][]=${RES_ID}&params[filter][status]=active&params[filter][metadata][plan]=pro&params[filter][created][gte]=1700000000&params[update][status]=archived&params[update][metadata][plan]=`;
    const json = {
      type: "resources.bulk_update",
      params: { filter: { ids: [RES_ID], status: "active", metadata: { plan: "pro" }, created: { gte: 1700000000 } }, update: { status: "archived", metadata: { plan: "" } } },
    };
    const viaForm = await stack.api.post("/v1/jobs", { key, form });
    const viaJson = await stack.api.post("/v1/jobs", { key, json });
    expect(viaForm.status).toBe(201);
    expect(viaForm.json.params).toEqual(json.params);
    expect(viaForm.json.progress).toEqual({ total: null, processed: 0, failed: 0, skipped: 0 });
    expect(masked(viaJson.text)).toBe(masked(viaForm.text));

    const indexed = await stack.api.post("/v1/jobs", { key, form: `type=resources.bulk_delete&params[filter][ids][0]=${RES_ID}&params[filter][created][lte]=5` });
    expect(indexed.status).toBe(201);
    expect(indexed.json.params).toEqual({ filter: { ids: [RES_ID], created: { lte: 5 } } });
    const clear = await stack.api.post("/v1/jobs", { key, form: "type=resources.bulk_update&params[filter][status]=paused&params[update][metadata]=" });
    expect(clear.status).toBe(201);
    expect(clear.json.params).toEqual({ filter: { status: "paused" }, update: { metadata: "" } });
  });

  it("accepts 10,000 items and 1,000 ids, refuses one more of either", async () => {
    const items = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `item ${i}` }));
    const ok = await stack.api.post("/v1/jobs", { key, json: { type: "resources.import", params: { items: items(10_000) } } });
    expect(ok.status).toBe(201);
    expect(ok.json.progress.total).toBe(10_000);
    // The same in a form, in the indexed bracket notation (more than the API's usual 1,000 parameters).
    const itemsForm = `type=resources.import&${items(10_000)
      .map((item, i) => `params[items][${i}][name]=${encodeURIComponent(item.name)}`)
      .join("&")}`;
    const viaForm = await stack.api.post("/v1/jobs", { key, form: itemsForm });
    expect(viaForm.status).toBe(201);
    expect(masked(viaForm.text)).toBe(masked(ok.text));
    const tooMany = await stack.api.post("/v1/jobs", { key, json: { type: "resources.import", params: { items: items(10_001) } } });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.error).toMatchObject({ code: "parameter_invalid", param: "params[items]" });

    const ids = (n: number) => Array.from({ length: n }, (_, i) => `res_${String(i).padStart(22, "0")}`);
    const form = (n: number) =>
      `type=resources.bulk_delete&${ids(n)
        .map((id) => `params[filter][ids][]=${id}`)
        .join("&")}`;
    expect((await stack.api.post("/v1/jobs", { key, form: form(1_000) })).status).toBe(201);
    // A form list longer than 1,000 is refused by the form decoder (lists stay within 1,000 there), JSON by core's rule.
    const overIdsForm = await stack.api.post("/v1/jobs", { key, form: form(1_001) });
    expect(overIdsForm.status).toBe(400);
    expect(overIdsForm.json.error.code).toBe("parameter_invalid");
    const overIds = await stack.api.post("/v1/jobs", { key, json: { type: "resources.bulk_delete", params: { filter: { ids: ids(1_001) } } } });
    expect(overIds.status).toBe(400);
    expect(overIds.json.error).toMatchObject({ code: "parameter_invalid", param: "params[filter][ids]" });
  });

  const bad: [string, unknown, string, string][] = [
    ["no type", { params: { items: [{ name: "a" }] } }, "parameter_missing", "type"],
    ["unknown type", { type: "resources.explode", params: {} }, "parameter_invalid", "type"],
    ["no params", { type: "resources.import" }, "parameter_missing", "params"],
    ["params not an object", { type: "resources.import", params: "x" }, "parameter_invalid", "params"],
    ["unknown params field", { type: "resources.import", params: { items: [{ name: "a" }], extra: 1 } }, "parameter_unknown", "params[extra]"],
    ["no items", { type: "resources.import", params: {} }, "parameter_missing", "params[items]"],
    ["empty items", { type: "resources.import", params: { items: [] } }, "parameter_invalid_empty", "params[items]"],
    ["item not an object", { type: "resources.import", params: { items: ["a"] } }, "parameter_invalid", "params[items][0]"],
    ["unknown item field", { type: "resources.import", params: { items: [{ name: "a", colour: "red" }] } }, "parameter_unknown", "params[items][0][colour]"],
    ["item name not a string", { type: "resources.import", params: { items: [{ name: "a" }, { name: 5 }] } }, "parameter_invalid", "params[items][1][name]"],
    ["item metadata value null", { type: "resources.import", params: { items: [{ name: "a", metadata: { k: null } }] } }, "metadata_invalid", "params[items][0][metadata][k]"],
    ["no filter", { type: "resources.bulk_delete", params: {} }, "parameter_missing", "params[filter]"],
    ["empty filter", { type: "resources.bulk_delete", params: { filter: {} } }, "parameter_invalid_empty", "params[filter]"],
    ["unknown filter field", { type: "resources.bulk_delete", params: { filter: { name: "a" } } }, "parameter_unknown", "params[filter][name]"],
    ["bad filter status", { type: "resources.bulk_delete", params: { filter: { status: "gone" } } }, "parameter_invalid", "params[filter][status]"],
    ["malformed id", { type: "resources.bulk_delete", params: { filter: { ids: [RES_ID, "job_x"] } } }, "parameter_invalid", "params[filter][ids][1]"],
    ["empty ids", { type: "resources.bulk_delete", params: { filter: { ids: [] } } }, "parameter_invalid_empty", "params[filter][ids]"],
    ["unknown created bound", { type: "resources.bulk_delete", params: { filter: { created: { gt: 1 } } } }, "parameter_unknown", "params[filter][created][gt]"],
    ["created not an integer", { type: "resources.bulk_delete", params: { filter: { created: { gte: "soon" } } } }, "parameter_invalid", "params[filter][created][gte]"],
    ["empty metadata filter value", { type: "resources.bulk_delete", params: { filter: { metadata: { k: "" } } } }, "parameter_invalid", "params[filter][metadata][k]"],
    [
      "metadata filter key with brackets",
      { type: "resources.bulk_delete", params: { filter: { metadata: { "a[b]": "1" } } } },
      "metadata_invalid",
      "params[filter][metadata][a[b]]",
    ],
    ["no update", { type: "resources.bulk_update", params: { filter: { status: "active" } } }, "parameter_missing", "params[update]"],
    ["empty update", { type: "resources.bulk_update", params: { filter: { status: "active" }, update: {} } }, "parameter_invalid_empty", "params[update]"],
    ["update of name", { type: "resources.bulk_update", params: { filter: { status: "active" }, update: { name: "x" } } }, "parameter_unknown", "params[update][name]"],
    ["bad update status", { type: "resources.bulk_update", params: { filter: { status: "active" }, update: { status: "" } } }, "parameter_invalid_empty", "params[update][status]"],
    [
      "update metadata value too long",
      { type: "resources.bulk_update", params: { filter: { status: "active" }, update: { metadata: { k: "x".repeat(501) } } } },
      "metadata_invalid",
      "params[update][metadata][k]",
    ],
  ];
  it.each(bad)("refuses %s with 400 and queues nothing", async (_label, body, code, param) => {
    const before = await db.collection("jobs").countDocuments();
    const response = await stack.api.post("/v1/jobs", { key, json: body });
    expect(response.status).toBe(400);
    expect(response.json.error).toMatchObject({ type: "invalid_request_error", code, param });
    expect(await db.collection("jobs").countDocuments()).toBe(before);
  });

  it("keeps the API's 1,000-parameter limit everywhere else", async () => {
    const form = Array.from({ length: 1_001 }, (_, i) => `metadata[k${i}]=v`).join("&");
    const response = await stack.api.post("/v1/resources", { key, form: `name=a&${form}` });
    expect(response.status).toBe(400);
    expect(response.json.error.code).toBe("parameter_invalid");
  });

  it("names nested params in form requests too", async () => {
    const response = await stack.api.post("/v1/jobs", { key, form: "type=resources.import&params[items][0][name]=a&params[items][2][name]=b" });
    expect(response.status).toBe(400);
    expect(response.json.error).toMatchObject({ code: "parameter_invalid", param: "params[items]" });
    const unknown = await stack.api.post("/v1/jobs", { key, form: "type=resources.import&params[items][0][nme]=a" });
    expect(unknown.json.error).toMatchObject({ code: "parameter_unknown", param: "params[items][0][nme]" });
  });
});

describe("GET /v1/jobs and /v1/jobs/{id}", () => {
  it("lists newest first with status, type and created filters and keyset cursors; retrieves one", async () => {
    const { key: own, account: mine } = await withSecretKey(stack);
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const body = i % 2 === 0 ? { type: "resources.import", params: { items: [{ name: `n${i}` }] } } : { type: "resources.bulk_delete", params: { filter: { ids: [RES_ID] } } };
      ids.push((await stack.api.post("/v1/jobs", { key: own, json: body })).json.id);
    }
    await setJob(ids[1]!, { status: "succeeded", finished_at: 1_800_000_000, result: { deleted: 1, errors: [] } });
    const list = (await stack.api.get("/v1/jobs", { key: own })).json as Json;
    expect(Object.keys(list)).toEqual(["object", "url", "has_more", "data"]);
    expect(list).toMatchObject({ object: "list", url: "/v1/jobs", has_more: false });
    expect(list.data.map((j: Json) => j.id)).toEqual([...ids].reverse());
    for (const job of list.data) expect(Object.keys(job)).toEqual(JOB_FIELDS);

    const idsOf = async (query: string) => ((await stack.api.get(`/v1/jobs?${query}`, { key: own })).json.data as Json[]).map((j) => j.id);
    expect(await idsOf("type=resources.import")).toEqual([ids[2], ids[0]]);
    expect(await idsOf("status=succeeded")).toEqual([ids[1]]);
    expect(await idsOf("status=queued&type=resources.bulk_delete")).toEqual([ids[3]]);
    const created = list.data[0].created as number;
    expect(await idsOf(`created[gt]=${created}`)).toEqual([]);
    expect(await idsOf(`created[lte]=${created}`)).toHaveLength(4);
    const page1 = (await stack.api.get("/v1/jobs?limit=3", { key: own })).json as Json;
    expect(page1.has_more).toBe(true);
    expect(await idsOf(`limit=3&starting_after=${page1.data[2].id}`)).toEqual([ids[0]]);
    expect(await idsOf(`limit=2&ending_before=${ids[0]}`)).toEqual([ids[2], ids[1]]);

    const bad = await stack.api.get("/v1/jobs?status=done", { key: own });
    expect(bad.json.error).toMatchObject({ code: "parameter_invalid", param: "status" });
    expect((await stack.api.get("/v1/jobs?type=x", { key: own })).json.error).toMatchObject({ code: "parameter_invalid", param: "type" });
    expect((await stack.api.get("/v1/jobs?limit=101", { key: own })).json.error.code).toBe("limit_invalid");
    expect((await stack.api.get(`/v1/jobs?starting_after=${RES_ID}`, { key: own })).json.error.param).toBe("starting_after");

    const one = await stack.api.get(`/v1/jobs/${ids[1]}`, { key: own });
    expect(one.status).toBe(200);
    expect(one.json).toEqual(list.data[2]);
    expect(one.json).toMatchObject({ status: "succeeded", finished_at: 1_800_000_000, result: { deleted: 1, errors: [] } });
    expect(mine.id).toBeDefined();
  });

  it("answers 404 for a job of another account or mode, and keeps lists apart", async () => {
    const job = (await stack.api.post("/v1/jobs", { key, json: { type: "resources.import", params: { items: [{ name: "mine" }] } } })).json.id as string;
    const other = (await withSecretKey(stack)).key;
    const live = (await account.key("secret", "live")).secret;
    for (const stranger of [other, live]) {
      for (const [method, path] of [
        ["GET", `/v1/jobs/${job}`],
        ["GET", `/v1/jobs/${job}/errors`],
        ["POST", `/v1/jobs/${job}/cancel`],
      ] as const) {
        const response = method === "GET" ? await stack.api.get(path, { key: stranger }) : await stack.api.post(path, { key: stranger });
        expect(response.status).toBe(404);
        expect(response.json.error).toMatchObject({ code: "resource_missing", param: "id" });
      }
      expect((await stack.api.get("/v1/jobs", { key: stranger })).json.data).toEqual([]);
    }
    expect((await stack.api.get(`/v1/jobs/${job}`, { key })).json.status).toBe("queued");
  });
});

describe("POST /v1/jobs/{id}/cancel", () => {
  const newJob = async () => (await stack.api.post("/v1/jobs", { key, json: { type: "resources.import", params: { items: [{ name: "c" }] } } })).json as Json;

  it("cancels a queued job at once, with its job.canceled event; a second cancel is 409", async () => {
    const job = await newJob();
    const canceled = await stack.api.post(`/v1/jobs/${job.id}/cancel`, { key });
    expect(canceled.status).toBe(200);
    expect(canceled.json).toMatchObject({ id: job.id, status: "canceled", result: { created: 0, errors: [] } });
    expect(canceled.json.finished_at).toBeGreaterThanOrEqual(job.created);
    expect((await stack.api.get(`/v1/jobs/${job.id}`, { key })).text).toBe(canceled.text);

    const event = await eventually(async () => {
      const events = (await stack.api.get("/v1/events?type=job.canceled", { key })).json.data as Json[];
      const found = events.find((e) => e.data.object.id === job.id);
      expect(found).toBeDefined();
      return found!;
    });
    expect(event.data.object).toEqual(canceled.json);

    const again = await stack.api.post(`/v1/jobs/${job.id}/cancel`, { key });
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ type: "invalid_request_error", code: "state_conflict" });
  });

  it("marks a running job with cancel_requested_at once (a second cancel keeps the first time) and leaves it running", async () => {
    const job = await newJob();
    await setJob(job.id, { status: "running", started_at: job.created, lease_owner: "worker-x", lease_until: Date.now() + 60_000, epoch: 1 });
    const first = await stack.api.post(`/v1/jobs/${job.id}/cancel`, { key });
    expect(first.status).toBe(200);
    expect(first.json.status).toBe("running");
    expect(first.json.cancel_requested_at).toEqual(expect.any(Number));
    await setJob(job.id, { cancel_requested_at: 1_000 }); // an earlier time, so a rewrite would show
    const second = await stack.api.post(`/v1/jobs/${job.id}/cancel`, { key });
    expect(second.json).toMatchObject({ status: "running", cancel_requested_at: 1_000 });
    const stored = await db.collection("jobs").findOne({ _id: job.id });
    expect(stored).toMatchObject({ lease_owner: "worker-x", epoch: 1, status: "running" });
  });

  it.each(["succeeded", "failed", "canceled"])("refuses to cancel a %s job with 409 state_conflict", async (status) => {
    const job = await newJob();
    await setJob(job.id, { status, finished_at: job.created });
    const response = await stack.api.post(`/v1/jobs/${job.id}/cancel`, { key, headers: { "Idempotency-Key": `cancel-${status}` } });
    expect(response.status).toBe(409);
    expect(response.json.error.code).toBe("state_conflict");
    expect((await stack.api.get(`/v1/jobs/${job.id}`, { key })).json.status).toBe(status);
    // The refusal came from executing the request: a retry with the key replays it.
    const replay = await stack.api.post(`/v1/jobs/${job.id}/cancel`, { key, headers: { "Idempotency-Key": `cancel-${status}` } });
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(replay.text).toBe(response.text);
  });
});

describe("GET /v1/jobs/{id}/errors", () => {
  it("lists a job's item errors by index with index cursors, in the list envelope", async () => {
    const job = (await stack.api.post("/v1/jobs", { key, json: { type: "resources.import", params: { items: [{ name: "" }] } } })).json as Json;
    const errors = [0, 2, 5, 11].map((index) => ({
      _id: `${job.id}:${index}`,
      job: job.id,
      account: account.id,
      livemode: false,
      index,
      id: null,
      code: "parameter_invalid_empty",
      param: "name",
      message: "empty",
    }));
    await db.collection("job_errors").insertMany(errors as never[]);
    const page = await stack.api.get(`/v1/jobs/${job.id}/errors?limit=2`, { key });
    expect(page.status).toBe(200);
    expect(Object.keys(page.json)).toEqual(["object", "url", "has_more", "data"]);
    expect(page.json).toMatchObject({ object: "list", url: `/v1/jobs/${job.id}/errors`, has_more: true });
    expect(page.json.data).toEqual([
      { index: 0, id: null, code: "parameter_invalid_empty", param: "name", message: "empty" },
      { index: 2, id: null, code: "parameter_invalid_empty", param: "name", message: "empty" },
    ]);
    const indexes = async (query: string) => ((await stack.api.get(`/v1/jobs/${job.id}/errors?${query}`, { key })).json.data as Json[]).map((e) => e.index);
    expect(await indexes("starting_after=2")).toEqual([5, 11]);
    expect(await indexes("ending_before=11&limit=2")).toEqual([2, 5]);
    expect((await stack.api.get(`/v1/jobs/${job.id}/errors?starting_after=1&ending_before=3`, { key })).json.error.code).toBe("parameter_invalid");
    expect((await stack.api.get(`/v1/jobs/${job.id}/errors?starting_after=x`, { key })).json.error.param).toBe("starting_after");
  });
});

describe("scopes", () => {
  it("jobs:read reads, jobs:write also writes (and reads), other keys get 403", async () => {
    const owner = await stack.newAccount();
    const secret = (await owner.key("secret")).secret;
    const job = (await stack.api.post("/v1/jobs", { key: secret, json: { type: "resources.import", params: { items: [{ name: "s" }] } } })).json.id as string;
    const reader = (await owner.key("restricted", "test", { scopes: ["jobs:read"] })).secret;
    const writer = (await owner.key("restricted", "test", { scopes: ["jobs:write"] })).secret;
    const resourcesOnly = (await owner.key("restricted", "test", { scopes: ["resources:read", "resources:write"] })).secret;
    const publishable = (await owner.key("publishable")).secret;
    const create = (k: string) => stack.api.post("/v1/jobs", { key: k, json: { type: "resources.import", params: { items: [{ name: "s" }] } } });

    for (const k of [reader, writer]) {
      expect((await stack.api.get("/v1/jobs", { key: k })).status).toBe(200);
      expect((await stack.api.get(`/v1/jobs/${job}`, { key: k })).status).toBe(200);
      expect((await stack.api.get(`/v1/jobs/${job}/errors`, { key: k })).status).toBe(200);
    }
    expect((await create(writer)).status).toBe(201);
    expect((await stack.api.post(`/v1/jobs/${job}/cancel`, { key: writer })).status).toBe(200);
    const refused = await create(reader);
    expect(refused.status).toBe(403);
    expect(refused.json.error).toMatchObject({ type: "permission_error", code: "insufficient_scope" });
    expect((await stack.api.post(`/v1/jobs/${job}/cancel`, { key: reader })).json.error.code).toBe("insufficient_scope");
    expect((await stack.api.get("/v1/jobs", { key: resourcesOnly })).json.error.code).toBe("insufficient_scope");
    expect((await create(resourcesOnly)).json.error.code).toBe("insufficient_scope");
    expect((await stack.api.get("/v1/jobs", { key: publishable })).status).toBe(403);
    expect((await create(publishable)).json.error.code).toBe("publishable_key_read_only");
  });
});
