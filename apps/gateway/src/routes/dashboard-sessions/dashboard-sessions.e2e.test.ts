import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../../testutil/harness.js";

let stack: Stack;
// The key that seals answers holding a secret (RMS_SECRET_KEY): a session's answer under an Idempotency-Key is one.
const SECRET_KEY = { primary: { id: "testkey1", bytes: Buffer.alloc(32, 7) } };
beforeAll(async () => {
  stack = await startStack({ coreSettings: { secretKeyring: SECRET_KEY } });
});
afterAll(() => stack.stop());

const KEY_IN_LINK = /^https:\/\/127\.0\.0\.1:\d+\/dashboard\/#key=(rk_(test|live)_[0-9A-Za-z]{32})$/;

describe("POST /v1/dashboard_sessions", () => {
  it("answers a sign-in link whose restricted key has every scope for an hour by default", async () => {
    const account = await stack.newAccount();
    const { secret } = await account.key("secret", "test");
    const before = Math.floor(Date.now() / 1000);
    const response = await stack.api.post("/v1/dashboard_sessions", { key: secret, json: {} });
    expect(response.status).toBe(201);
    expect(Object.keys(response.json)).toEqual(["id", "object", "url", "read_only", "expires_at", "api_key", "revoked_at"]);
    expect(response.json.id).toBe(response.json.api_key);
    expect(response.json).toMatchObject({ object: "dashboard_session", read_only: false });
    expect(response.json.api_key).toMatch(/^key_[0-9A-Za-z]+$/);
    expect(response.json.expires_at).toBeGreaterThanOrEqual(before + 3600);
    expect(response.json.expires_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 3600);
    const link = KEY_IN_LINK.exec(response.json.url as string);
    expect(link?.[2]).toBe("test");
    const key = link![1]!;
    // Every scope: it writes resources, reads events and jobs, manages webhook endpoints.
    expect((await stack.api.post("/v1/resources", { key, form: { name: "from the dashboard" } })).status).toBe(201);
    expect((await stack.api.get("/v1/events", { key })).status).toBe(200);
    expect((await stack.api.get("/v1/jobs", { key })).status).toBe(200);
    expect((await stack.api.get("/v1/webhook_endpoints", { key })).status).toBe(200);
    // A restricted key (with every scope) may not make another session: secret keys only.
    const again = await stack.api.post("/v1/dashboard_sessions", { key, json: {} });
    expect(again.status).toBe(403);
    expect(again.json.error).toMatchObject({ type: "permission_error", code: "insufficient_scope" });
    // The key is listed among the account's keys (the operator can revoke it), as restricted, with its expiry.
    const { keys } = await stack.admin.listKeys({ accountId: account.id });
    const made = keys.find((k) => k.id === response.json.api_key);
    expect(Number(made?.expiresAt)).toBe(response.json.expires_at);
  });

  it("read_only makes a key with the read scopes only, which changes nothing", async () => {
    const account = await stack.newAccount();
    const { secret } = await account.key("secret", "test");
    const response = await stack.api.post("/v1/dashboard_sessions", { key: secret, form: { read_only: "true", expires_in: "600" } });
    expect(response.status).toBe(201);
    expect(response.json.read_only).toBe(true);
    const key = KEY_IN_LINK.exec(response.json.url as string)![1]!;
    expect((await stack.api.get("/v1/resources", { key })).status).toBe(200);
    expect((await stack.api.get("/v1/events", { key })).status).toBe(200);
    for (const refused of [
      await stack.api.post("/v1/resources", { key, form: { name: "no" } }),
      await stack.api.post("/v1/jobs", { key, json: { type: "resources.bulk_delete", params: { filter: { status: "active" } } } }),
      await stack.api.get("/v1/webhook_endpoints", { key }),
    ]) {
      expect(refused.status).toBe(403);
      expect(refused.json.error).toMatchObject({ code: "insufficient_scope" });
    }
  });

  it("a live secret key makes a live key; expires_in is 1 to 86400 seconds", async () => {
    const account = await stack.newAccount();
    const { secret } = await account.key("secret", "live");
    const day = await stack.api.post("/v1/dashboard_sessions", { key: secret, json: { expires_in: 86_400 } });
    expect(day.status).toBe(201);
    expect(KEY_IN_LINK.exec(day.json.url as string)?.[2]).toBe("live");
    expect(day.json.expires_at).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) + 86_400 - 5);
    for (const expiresIn of [0, 86_401, "soon"]) {
      const refused = await stack.api.post("/v1/dashboard_sessions", { key: secret, json: { expires_in: expiresIn } });
      expect(refused.status).toBe(400);
      expect(refused.json.error).toMatchObject({ code: "parameter_invalid", param: "expires_in" });
    }
    const unknown = await stack.api.post("/v1/dashboard_sessions", { key: secret, json: { scopes: ["resources:read"] } });
    expect(unknown.json.error).toMatchObject({ code: "parameter_unknown", param: "scopes" });
  });

  it("refuses publishable and restricted keys", async () => {
    const account = await stack.newAccount();
    const publishable = await account.key("publishable", "test");
    const restricted = await account.key("restricted", "test", { scopes: ["resources:read", "resources:write"] });
    const byPublishable = await stack.api.post("/v1/dashboard_sessions", { key: publishable.secret, json: {} });
    expect(byPublishable.status).toBe(403);
    expect(byPublishable.json.error).toMatchObject({ code: "publishable_key_read_only" });
    const byRestricted = await stack.api.post("/v1/dashboard_sessions", { key: restricted.secret, json: {} });
    expect(byRestricted.status).toBe(403);
    expect(byRestricted.json.error).toMatchObject({ code: "insufficient_scope" });
    const { keys } = await stack.admin.listKeys({ accountId: account.id });
    expect(keys).toHaveLength(2);
  });

  it(
    "under an Idempotency-Key: one key, the repeat is the first answer (same link) marked replayed, the record holds no secret in clear; another body " +
      "is 400 reused",
    async () => {
      const account = await stack.newAccount();
      const { secret } = await account.key("secret", "test");
      const post = (json: Record<string, unknown>) =>
        stack.api.post("/v1/dashboard_sessions", { key: secret, json, headers: { "idempotency-key": "dash-session-1" } });
      const first = await post({ expires_in: 900 });
      expect(first.status).toBe(201);
      const again = await post({ expires_in: 900 });
      expect(again.status).toBe(201);
      expect(again.text).toBe(first.text);
      expect(again.headers["idempotent-replayed"]).toBe("true");
      expect(again.headers["original-request"]).toBe(first.headers["request-id"]);
      const made = KEY_IN_LINK.exec(first.json.url as string)![1]!;
      // The replayed link's key works: it is the one key made.
      expect((await stack.api.get("/v1/resources", { key: KEY_IN_LINK.exec(again.json.url as string)![1]! })).status).toBe(200);
      const { keys } = await stack.admin.listKeys({ accountId: account.id });
      expect(keys.filter((k) => k.id !== undefined && k.id === first.json.api_key)).toHaveLength(1);
      expect(keys).toHaveLength(2);
      const mongo = await new MongoClient(stack.mongoUri).connect();
      try {
        const records = await mongo.db(stack.databaseName).collection("idempotency_keys").find({ account: account.id }).toArray();
        expect(records).toHaveLength(1);
        expect(JSON.stringify(records)).not.toContain(made);
        expect(JSON.stringify(records)).not.toContain(made.slice("rk_test_".length));
      } finally {
        await mongo.close();
      }
      const other = await post({ expires_in: 900, read_only: true });
      expect(other.status).toBe(400);
      expect(other.json.error).toMatchObject({ code: "idempotency_key_reused" });
      expect((await stack.admin.listKeys({ accountId: account.id })).keys).toHaveLength(2);
    },
  );
});
