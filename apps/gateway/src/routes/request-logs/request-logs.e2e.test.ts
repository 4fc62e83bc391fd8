import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REQUEST_LOGS_COLLECTION } from "../../request-logs/store.js";
import { startStack, withSecretKey, type Account, type Stack } from "../../testutil/harness.js";

/** A secret key's shape in a request's parameters (made here: no text shaped like a key is kept in the repository). */
const SECRET_IN_PARAMS = ["sk", "test", "shouldnotbestored"].join("_");

// CONTRACT.md section 12 over HTTPS: a create, a 404, a 400 and an endpoint create (its secret redacted) are listed
// within about a second of their answers, found by each filter, and seen by no other account and not in the other mode.

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = Record<string, any>;

let stack: Stack;
let mongo: MongoClient;
let account: Account;
let key: string;
let keyId: string;
beforeAll(async () => {
  stack = await startStack({ coreSettings: { secretKeyring: { primary: { id: "logskey1", bytes: Buffer.alloc(32, 9) } }, webhookAllowPrivate: false } });
  mongo = new MongoClient(stack.mongoUri);
  account = await stack.newAccount();
  ({ secret: key, id: keyId } = await account.key("secret", "test"));
});
afterAll(async () => {
  await mongo?.close();
  await stack?.stop();
});

const raw = () => mongo.db(stack.databaseName).collection(REQUEST_LOGS_COLLECTION);
const list = async (query: string, as = key) => {
  const answer = await stack.api.get(`/v1/request_logs${query}`, { key: as });
  expect(answer.status, JSON.stringify(answer.json)).toBe(200);
  return answer.json.data as Json[];
};
const ids = (logs: Json[]) => logs.map((l) => l["id"] as string);

describe("the four requests of the issue", () => {
  const seen: Record<string, { id: string; status: number; json: Json; headers: Record<string, string | undefined> }> = {};
  let startedAt = 0;
  let resourceId = "";

  beforeAll(async () => {
    startedAt = Math.floor(Date.now() / 1000);
    const created = await stack.api.post("/v1/resources", {
      key,
      json: { name: "logged", metadata: { note: `key ${SECRET_IN_PARAMS}` } },
      headers: { "idempotency-key": "logs-create-1", "user-agent": "logs-test/1.0" },
    });
    const missing = await stack.api.get("/v1/resources/res_0000000000000000000000", { key });
    const invalid = await stack.api.post("/v1/resources", { key, json: { name: "bad", status: "sleeping" } });
    const endpoint = await stack.api.post("/v1/webhook_endpoints", {
      key,
      json: { url: "https://hooks.example.com/logs", enabled_events: ["resource.created"] },
    });
    expect([created.status, missing.status, invalid.status, endpoint.status]).toEqual([201, 404, 400, 201]);
    expect(endpoint.json.secret).toMatch(/^whsec_/);
    resourceId = created.json.id;
    for (const [name, r] of Object.entries({ created, missing, invalid, endpoint }))
      seen[name] = { id: r.headers["request-id"]!, status: r.status, json: r.json, headers: r.headers };
  });

  it("appear in the list within about a second of their answers, newest first, as the contract's object", async () => {
    const expected = ["endpoint", "invalid", "missing", "created"].map((n) => seen[n]!.id);
    // Batches are written at most a quarter of a second apart; the bound only keeps a broken recorder from hanging the test.
    const logs = await eventually(
      async () => {
        const page = await list("?limit=100");
        expect(ids(page).filter((id) => expected.includes(id))).toEqual(expected);
        return page;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    const created = logs.find((l) => l["id"] === seen["created"]!.id)!;
    expect(Object.keys(created)).toEqual([
      "id",
      "object",
      "method",
      "path",
      "status",
      "error_type",
      "error_code",
      "api_key",
      "key_kind",
      "idempotency_key",
      "idempotent_replayed",
      "duration_ms",
      "client_ip",
      "user_agent",
      "livemode",
      "created",
      "request_params",
      "response_body",
      "source",
    ]);
    expect(created).toMatchObject({
      object: "request_log",
      method: "POST",
      path: "/v1/resources",
      status: 201,
      error_type: null,
      error_code: null,
      api_key: keyId,
      key_kind: "secret",
      idempotency_key: "logs-create-1",
      idempotent_replayed: false,
      client_ip: "127.0.0.1",
      user_agent: "logs-test/1.0",
      livemode: false,
      request_params: { name: "logged", metadata: { note: "key [redacted]" } },
      response_body: { ...seen["created"]!.json, metadata: { note: "key [redacted]" } },
      source: "api",
    });
    expect(created["created"]).toBeGreaterThanOrEqual(startedAt);
    const missing = logs.find((l) => l["id"] === seen["missing"]!.id)!;
    expect(missing).toMatchObject({
      method: "GET",
      path: "/v1/resources/res_0000000000000000000000",
      status: 404,
      error_type: "invalid_request_error",
      error_code: "resource_missing",
      request_params: {},
    });
    expect(missing["response_body"]).toEqual(seen["missing"]!.json);
    const invalid = logs.find((l) => l["id"] === seen["invalid"]!.id)!;
    expect(invalid).toMatchObject({ status: 400, error_code: "parameter_invalid", request_params: { name: "bad", status: "sleeping" } });
  });

  it("keeps a retrieve, a list page and a search page as answered (from the rendered object, and from core's page text)", async () => {
    // One with nothing to redact (its record is the rendered object as it is, metadata map and all), one with key material.
    const plain = await stack.api.post("/v1/resources", { key, json: { name: "plain", metadata: { plan: "pro", "2": "b" } } });
    expect(plain.status).toBe(201);
    const answers = [
      await stack.api.get(`/v1/resources/${plain.json.id}`, { key }),
      await stack.api.get(`/v1/resources/${resourceId}`, { key }),
      await stack.api.get("/v1/resources?limit=2", { key }),
      await stack.api.get(`/v1/resources/search?query=${encodeURIComponent("status:'active'")}&limit=2`, { key }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      const log = await eventually(async () => {
        const found = await stack.api.get(`/v1/request_logs/${answer.headers["request-id"]}`, { key });
        expect(found.status).toBe(200);
        return found.json as Json;
      });
      // The created resource's metadata holds key material: redacted in every answer that shows it.
      const redacted = JSON.parse(JSON.stringify(answer.json).replaceAll(SECRET_IN_PARAMS, "[redacted]")) as Json;
      expect(log["response_body"]).toEqual(redacted);
    }
  });

  it("keeps no webhook secret: the endpoint create's answer has it redacted, and no stored record holds it", async () => {
    const endpoint = await eventually(async () => {
      const answer = await stack.api.get(`/v1/request_logs/${seen["endpoint"]!.id}`, { key });
      expect(answer.status).toBe(200);
      return answer.json as Json;
    });
    expect(endpoint["response_body"]).toEqual({ ...seen["endpoint"]!.json, secret: "[redacted]" });
    const stored = JSON.stringify(await raw().find({}).toArray());
    expect(stored).not.toContain(seen["endpoint"]!.json.secret);
    expect(stored).not.toMatch(/whsec_|whsk_|sk_test_|sk_live_/);
    expect(stored).not.toContain(key);
  });

  it("finds each of them by each filter, and by the created range", async () => {
    const mine = Object.values(seen).map((s) => s.id);
    // Every page of the filter, walked: the test's own reads of the logs are logged too, and a slow machine's retries
    // push the four past any one page (CI once saw `created` fall off the first page of `api_key`).
    const found = async (query: string) => {
      const walked: string[] = [];
      for (let after = ""; ; ) {
        const answer = await stack.api.get(`/v1/request_logs${query}&limit=100${after ? `&starting_after=${after}` : ""}`, { key });
        expect(answer.status, JSON.stringify(answer.json)).toBe(200);
        walked.push(...ids(answer.json.data));
        if (!answer.json.has_more) return walked.filter((id) => mine.includes(id));
        after = walked.at(-1)!;
      }
    };
    const id = (name: string) => seen[name]!.id;
    expect(await found("?status=201")).toEqual([id("endpoint"), id("created")]);
    expect(await found("?status=4xx")).toEqual([id("invalid"), id("missing")]);
    expect(await found("?status=404")).toEqual([id("missing")]);
    expect(await found("?method=POST")).toEqual([id("endpoint"), id("invalid"), id("created")]);
    expect(await found("?method=GET")).toEqual([id("missing")]);
    expect(await found("?path=/v1/resources")).toEqual([id("invalid"), id("created")]);
    expect(await found("?path=/v1/resources/res_0000000000000000000000")).toEqual([id("missing")]);
    expect(await found("?path=/v1/webhook_endpoints&method=POST")).toEqual([id("endpoint")]);
    expect(await found(`?api_key=${keyId}`)).toEqual([id("endpoint"), id("invalid"), id("missing"), id("created")]);
    expect(await found("?idempotency_key=logs-create-1")).toEqual([id("created")]);
    expect(await found("?error_code=resource_missing")).toEqual([id("missing")]);
    expect(await found("?error_code=parameter_invalid")).toEqual([id("invalid")]);
    expect(await found(`?created[gte]=${startedAt}`)).toEqual([id("endpoint"), id("invalid"), id("missing"), id("created")]);
    expect(await found(`?created[lt]=${startedAt}`)).toEqual([]);
    expect(await found(`?status=4xx&created[gte]=${startedAt}&created[lte]=${startedAt + 3600}`)).toEqual([id("invalid"), id("missing")]);
    // The object's own path, as a filter: its create is under the collection, its later reads under itself.
    await stack.api.get(`/v1/resources/${resourceId}`, { key });
    await eventually(async () => expect(await list(`?path=/v1/resources/${resourceId}`)).toHaveLength(1));
  });

  it("pages with the cursors, one log at a time, in both directions", async () => {
    const mine = ["endpoint", "invalid", "missing", "created"].map((n) => seen[n]!.id);
    const walked: string[] = [];
    let after = "";
    for (;;) {
      const answer = await stack.api.get(`/v1/request_logs?method=POST&limit=1${after ? `&starting_after=${after}` : ""}`, { key });
      expect(answer.status).toBe(200);
      walked.push(...ids(answer.json.data));
      if (!answer.json.has_more) break;
      after = answer.json.data[0].id;
    }
    expect(walked.filter((id) => mine.includes(id))).toEqual([mine[0], mine[1], mine[3]]);
    const before = await list(`?method=POST&limit=1&ending_before=${seen["created"]!.id}`);
    expect(ids(before)).toEqual([seen["invalid"]!.id]);
  });

  it("shows none of them to another account, nor to the same account's live key; a retrieve there is 404", async () => {
    const mine = Object.values(seen).map((s) => s.id);
    const { key: otherKey } = await withSecretKey(stack);
    const { secret: liveKey } = await account.key("secret", "live");
    for (const as of [otherKey, liveKey]) {
      expect(ids(await list("?limit=100", as)).filter((id) => mine.includes(id))).toEqual([]);
      expect(ids(await list("?status=4xx", as)).filter((id) => mine.includes(id))).toEqual([]);
      expect(ids(await list(`?api_key=${keyId}`, as))).toEqual([]);
      const retrieve = await stack.api.get(`/v1/request_logs/${seen["created"]!.id}`, { key: as });
      expect(retrieve.status).toBe(404);
      expect(retrieve.json.error.code).toBe("resource_missing");
    }
  });

  it("carries RateLimit-Policy and RateLimit on every keyed answer, errors too", () => {
    for (const s of Object.values(seen)) {
      expect(s.headers["ratelimit-policy"]).toBe('"key";q=10000;w=1');
      expect(s.headers["ratelimit"]).toMatch(/^"key";r=\d+;t=\d+$/);
    }
  });

  it("keeps each record 14 days by its expires_at (the TTL index's)", async () => {
    const stored = await raw().findOne({ _id: seen["created"]!.id as never });
    const created = Number(stored!["created"]);
    expect((stored!["expires_at"] as Date).getTime()).toBeGreaterThanOrEqual(created * 1000 + 14 * 86_400_000);
    expect((stored!["expires_at"] as Date).getTime()).toBeLessThan((created + 1) * 1000 + 14 * 86_400_000);
    const ttl = (await raw().indexes()).find((index) => index.name === "expires_at");
    expect(ttl).toMatchObject({ key: { expires_at: 1 }, expireAfterSeconds: 0 });
  });
});

describe("what is recorded, and for whom", () => {
  it("records a refusal of a revoked or expired key for its account, and nothing for an unknown key", async () => {
    const revoked = await account.key("restricted", "test", { scopes: ["resources:read"] });
    expect((await stack.api.get("/v1/resources", { key: revoked.secret })).status).toBe(200);
    await stack.admin.revokeKey({ keyId: revoked.id, reason: "test" });
    const refusedRevoked = await stack.api.get("/v1/resources", { key: revoked.secret });
    expect(refusedRevoked.status).toBe(401);
    expect(refusedRevoked.json.error.code).toBe("api_key_revoked");
    const expired = await account.key("secret", "test", { expiresAt: Math.floor(Date.now() / 1000) - 10 });
    const refusedExpired = await stack.api.get("/v1/resources", { key: expired.secret });
    expect(refusedExpired.json.error.code).toBe("api_key_expired");
    const unknown = await stack.api.get("/v1/resources", { key: `sk_test_${"Z".repeat(32)}` });
    expect(unknown.json.error.code).toBe("api_key_invalid");
    expect(unknown.headers["ratelimit"]).toBeUndefined();

    await eventually(async () => {
      expect(await list(`?api_key=${revoked.id}&limit=100`)).toEqual([
        expect.objectContaining({
          id: refusedRevoked.headers["request-id"],
          status: 401,
          error_type: "authentication_error",
          error_code: "api_key_revoked",
          key_kind: "restricted",
        }),
        expect.objectContaining({ status: 200 }),
      ]);
      expect(await list(`?api_key=${expired.id}`)).toEqual([
        expect.objectContaining({ id: refusedExpired.headers["request-id"], status: 401, error_code: "api_key_expired" }),
      ]);
    });
    expect(await raw().countDocuments({ _id: unknown.headers["request-id"] as never })).toBe(0);
  });

  it("records no file contents (multipart, octet-stream) and cuts long parameters at 8 KiB with truncated", async () => {
    const multipart = await stack.api.post("/v1/resources", {
      key,
      body: '--b\r\ncontent-disposition: form-data; name="name"\r\n\r\nsecret-bytes\r\n--b--\r\n',
      headers: { "content-type": "multipart/form-data; boundary=b" },
    });
    const octets = await stack.api.post("/v1/resources", { key, body: Buffer.from("raw file bytes"), headers: { "content-type": "application/octet-stream" } });
    const metadata = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, "v".repeat(400)]));
    const big = await stack.api.post("/v1/resources", { key, json: { name: "big", metadata } });
    expect(big.status).toBe(201);
    await eventually(async () => {
      for (const r of [multipart, octets]) {
        const log = (await stack.api.get(`/v1/request_logs/${r.headers["request-id"]}`, { key })).json;
        expect(log).toMatchObject({ status: r.status, request_params: null });
      }
      const log = (await stack.api.get(`/v1/request_logs/${big.headers["request-id"]}`, { key })).json;
      expect(log.request_params.truncated).toBe(true);
      expect(log.request_params.name).toBe("big");
      expect(Buffer.byteLength(JSON.stringify(log.request_params))).toBeLessThanOrEqual(8 * 1024);
      expect(log.response_body.truncated).toBe(true);
      expect(log.response_body.id).toBe(big.json.id);
      expect(Buffer.byteLength(JSON.stringify(log.response_body))).toBeLessThanOrEqual(8 * 1024);
    });
    expect(JSON.stringify(await raw().find({}).toArray())).not.toContain("raw file bytes");
  });

  it("marks a replay, with the idempotency key it carried", async () => {
    const first = await stack.api.post("/v1/resources", { key, json: { name: "replayed" }, headers: { "idempotency-key": "logs-replay" } });
    const again = await stack.api.post("/v1/resources", { key, json: { name: "replayed" }, headers: { "idempotency-key": "logs-replay" } });
    expect(again.headers["idempotent-replayed"]).toBe("true");
    await eventually(async () => {
      const logs = await list("?idempotency_key=logs-replay");
      expect(logs.map((l) => [l["id"], l["idempotent_replayed"], l["status"]])).toEqual([
        [again.headers["request-id"], true, 201],
        [first.headers["request-id"], false, 201],
      ]);
    });
  });
});

describe("the list's rules", () => {
  it("refuses a combination of filters no index serves (400), and bad filter values", async () => {
    for (const query of ["?status=4xx&method=POST", "?api_key=key_0000000000000000000000&error_code=resource_missing", "?path=/v1/resources&status=201"]) {
      const answer = await stack.api.get(`/v1/request_logs${query}`, { key });
      expect(answer.status, query).toBe(400);
      expect(answer.json.error).toMatchObject({ type: "invalid_request_error", code: "parameter_invalid" });
      expect(answer.json.error.message).toContain("No index serves");
    }
    for (const query of ["?status=600", "?status=4x", "?method=PUT", "?path=v1", "?starting_after=res_0000000000000000000000", "?limit=101"]) {
      const answer = await stack.api.get(`/v1/request_logs${query}`, { key });
      expect(answer.status, query).toBe(400);
    }
    expect((await stack.api.get(`/v1/request_logs?starting_after=req_${"0".repeat(24)}&ending_before=req_${"0".repeat(24)}`, { key })).status).toBe(400);
    expect((await stack.api.get("/v1/request_logs/req_nope", { key })).status).toBe(404);
  });

  it("takes a text filter exactly when the document's schema does (one definition of each)", async () => {
    const doc = (await stack.api.get("/v1/openapi.json")).json;
    const parameters = doc.paths["/v1/request_logs"].get.parameters as Json[];
    const schemaOf = (name: string) => parameters.find((p) => p["name"] === name)!["schema"] as Json;
    const accepts = (schema: Json, value: string) =>
      value.length >= schema["minLength"] && value.length <= schema["maxLength"] && new RegExp(schema["pattern"]).test(value);
    const values: [string, string][] = [
      ["idempotency_key", "plain-key-1"],
      ["idempotency_key", "clé"],
      ["idempotency_key", "x".repeat(256)],
      ["api_key", `key_${"a".repeat(60)}`],
      ["api_key", `key_${"a".repeat(61)}`],
      ["path", "/v1/resources"],
      ["path", "/v1/a b"],
      ["error_code", "resource_missing"],
      ["error_code", "x".repeat(65)],
      ["status", "404"],
    ];
    for (const [name, value] of values) {
      const answer = await stack.api.get(`/v1/request_logs?${name}=${encodeURIComponent(value)}`, { key });
      expect([name, value, answer.status]).toEqual([name, value, accepts(schemaOf(name), value) ? 200 : 400]);
    }
  });

  it("needs request_logs:read: secret keys have it, restricted keys only when given, publishable keys never", async () => {
    const { secret: publishable } = await account.key("publishable", "test");
    const { secret: without } = await account.key("restricted", "test", { scopes: ["resources:read"] });
    const { secret: withScope } = await account.key("restricted", "test", { scopes: ["request_logs:read"] });
    expect((await stack.api.get("/v1/request_logs", { key: publishable })).json.error.code).toBe("publishable_key_read_only");
    expect((await stack.api.get("/v1/request_logs", { key: without })).json.error.code).toBe("insufficient_scope");
    expect((await stack.api.get("/v1/request_logs", { key: withScope })).status).toBe(200);
  });
});
