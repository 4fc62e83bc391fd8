import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Account, type Stack } from "../testutil/harness.js";
import { openSse } from "../testutil/sse.js";

// Keys that must not outlive their revocation (issue 41, item 3): reads the gateway answers alone check the key as
// calls through core do, a dashboard session ends with the key that made it or when revoked, and a refused key's
// requests are limited per key and recorded without the text their client chose.

/** Live keys' requests per second: low, so that a refused live key's flood reaches it; test keys are not limited here. */
const RATE = 5;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ gateway: { rateLimits: { live: RATE, test: 10_000 } } });
});
afterAll(() => stack?.stop());

const KEY_IN_LINK = /#key=(rk_(?:test|live)_[0-9A-Za-z]+)$/;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function session(secret: string, json: Record<string, unknown> = {}) {
  const made = await stack.api.post("/v1/dashboard_sessions", { key: secret, json });
  expect(made.status, made.text).toBe(201);
  return { id: made.json.id as string, key: KEY_IN_LINK.exec(made.json.url as string)![1]!, json: made.json };
}

describe("reads the gateway answers alone (request logs, the account)", () => {
  it("refuse a key revoked a moment ago, though it was verified (and cached) just before", async () => {
    const account = await stack.newAccount();
    const key = await account.key("secret", "test");
    expect((await stack.api.get("/v1/request_logs", { key: key.secret })).status).toBe(200);
    expect((await stack.api.get("/v1/account", { key: key.secret })).status).toBe(200);
    // Through core, so that the gateway's cache of verified keys holds it.
    expect((await stack.api.get("/v1/resources", { key: key.secret })).status).toBe(200);
    const open = () => openSse(stack.gateway.httpsPort, stack.gateway.certificate, "/v1/request_logs/stream", { key: key.secret });
    const streaming = await open();
    expect(streaming.status).toBe(200);
    streaming.close();
    await stack.admin.revokeKey({ keyId: key.id, reason: "test" });
    for (const path of ["/v1/request_logs", `/v1/request_logs/req_${"0".repeat(24)}`, "/v1/account"]) {
      const refused = await stack.api.get(path, { key: key.secret });
      expect(refused.status, path).toBe(401);
      expect(refused.json.error.code).toBe("api_key_revoked");
    }
    // The stream of request logs too, when it opens.
    const refusedStream = await open();
    refusedStream.close();
    expect([refusedStream.status, refusedStream.error?.code]).toEqual([401, "api_key_revoked"]);
  });

  it("refuse a dashboard key past its expires_in", async () => {
    const account = await stack.newAccount();
    const { secret } = await account.key("secret", "test");
    const dashboard = await session(secret, { expires_in: 2 });
    expect((await stack.api.get("/v1/request_logs", { key: dashboard.key })).status).toBe(200);
    // Past its expiry (whole seconds), with a margin.
    await sleep((dashboard.json.expires_at as number) * 1000 - Date.now() + 1_100);
    const refused = await stack.api.get("/v1/request_logs", { key: dashboard.key });
    expect(refused.status).toBe(401);
    expect(refused.json.error.code).toBe("api_key_expired");
  });
});

describe("GET /v1/account", () => {
  it("names the key's account and mode, and the key (a dashboard session's too)", async () => {
    const account = await stack.newAccount();
    const key = await account.key("secret", "test");
    const own = await stack.api.get("/v1/account", { key: key.secret });
    expect(own.status).toBe(200);
    expect(own.json).toEqual({ id: account.id, object: "account", livemode: false, api_key: key.id, key_kind: "secret", dashboard_session: false });
    const dashboard = await session(key.secret, { read_only: true });
    const viaSession = await stack.api.get("/v1/account", { key: dashboard.key });
    expect(viaSession.json).toEqual({
      id: account.id,
      object: "account",
      livemode: false,
      api_key: dashboard.id,
      key_kind: "restricted",
      dashboard_session: true,
    });
    const publishable = await account.key("publishable", "live");
    expect((await stack.api.get("/v1/account", { key: publishable.secret })).json).toMatchObject({ id: account.id, livemode: true, key_kind: "publishable" });
  });
});

describe("a dashboard session", () => {
  let account: Account;
  let creator: { secret: string; id: string };
  beforeAll(async () => {
    account = await stack.newAccount();
    creator = await account.key("secret", "test");
  });

  it("ends with the secret key that made it: refused at once, through core and by the gateway alone", async () => {
    const made = await account.key("secret", "test");
    const dashboard = await session(made.secret);
    expect(dashboard.json).toMatchObject({ id: dashboard.json.api_key, object: "dashboard_session", revoked_at: null });
    expect((await stack.api.get("/v1/resources", { key: dashboard.key })).status).toBe(200);
    await stack.admin.revokeKey({ keyId: made.id, reason: "test" });
    for (const path of ["/v1/resources", "/v1/request_logs"]) {
      const refused = await stack.api.get(path, { key: dashboard.key });
      expect(refused.status, path).toBe(401);
      expect(refused.json.error.code).toBe("api_key_revoked");
    }
    // The operator's list shows it revoked too.
    const listed = (await stack.admin.listKeys({ accountId: account.id })).keys.find((k) => k.id === dashboard.id);
    expect(listed).toMatchObject({ dashboardSession: true, createdBy: made.id });
    expect(listed!.revokedAt).not.toBe(0n);
    // Another session of the account, made by another key, goes on.
    const other = await session(creator.secret);
    expect((await stack.api.get("/v1/resources", { key: other.key })).status).toBe(200);
  });

  it("POST /v1/dashboard_sessions/{id}/revoke by a secret key of the account ends it at once", async () => {
    const dashboard = await session(creator.secret);
    expect((await stack.api.get("/v1/resources", { key: dashboard.key })).status).toBe(200);
    const ended = await stack.api.post(`/v1/dashboard_sessions/${dashboard.id}/revoke`, { key: creator.secret });
    expect(ended.status, ended.text).toBe(200);
    expect(ended.json).toMatchObject({ id: dashboard.id, object: "dashboard_session", url: null, read_only: false, api_key: dashboard.id });
    expect(ended.json.revoked_at).toBeGreaterThan(0);
    for (const path of ["/v1/resources", "/v1/request_logs", "/v1/account"]) {
      const refused = await stack.api.get(path, { key: dashboard.key });
      expect(refused.status, path).toBe(401);
      expect(refused.json.error.code).toBe("api_key_revoked");
    }
    // Again: the same answer (the first revocation's time is kept).
    const again = await stack.api.post(`/v1/dashboard_sessions/${dashboard.id}/revoke`, { key: creator.secret });
    expect(again.json).toEqual(ended.json);
  });

  it("a session's own key ends that session (signing out), a read-only one too, and no other", async () => {
    const dashboard = await session(creator.secret, { read_only: true });
    const other = await session(creator.secret);
    const notOwn = await stack.api.post(`/v1/dashboard_sessions/${other.id}/revoke`, { key: dashboard.key });
    expect(notOwn.status).toBe(403);
    expect(notOwn.json.error.code).toBe("insufficient_scope");
    const signedOut = await stack.api.post(`/v1/dashboard_sessions/${dashboard.id}/revoke`, { key: dashboard.key });
    expect(signedOut.status, signedOut.text).toBe(200);
    expect(signedOut.json).toMatchObject({ id: dashboard.id, read_only: true });
    expect((await stack.api.get("/v1/resources", { key: dashboard.key })).status).toBe(401);
    expect((await stack.api.get("/v1/resources", { key: other.key })).status).toBe(200);
  });

  it("is refused to other keys: restricted and publishable keys, another account's, another mode's; a key that is no session is no session", async () => {
    const dashboard = await session(creator.secret);
    const restricted = await account.key("restricted", "test", { scopes: ["resources:read", "resources:write", "request_logs:read"] });
    const byRestricted = await stack.api.post(`/v1/dashboard_sessions/${dashboard.id}/revoke`, { key: restricted.secret });
    expect([byRestricted.status, byRestricted.json.error.code]).toEqual([403, "insufficient_scope"]);
    const publishable = await account.key("publishable", "test");
    const byPublishable = await stack.api.post(`/v1/dashboard_sessions/${dashboard.id}/revoke`, { key: publishable.secret });
    expect([byPublishable.status, byPublishable.json.error.code]).toEqual([403, "publishable_key_read_only"]);
    const stranger = await (await stack.newAccount()).key("secret", "test");
    const byStranger = await stack.api.post(`/v1/dashboard_sessions/${dashboard.id}/revoke`, { key: stranger.secret });
    expect([byStranger.status, byStranger.json.error.code]).toEqual([404, "resource_missing"]);
    const live = await account.key("secret", "live");
    expect((await stack.api.post(`/v1/dashboard_sessions/${dashboard.id}/revoke`, { key: live.secret })).status).toBe(404);
    for (const id of [creator.id, restricted.id, "key_nope", "res_0000000000000000000000"]) {
      const notSession = await stack.api.post(`/v1/dashboard_sessions/${id}/revoke`, { key: creator.secret });
      expect([notSession.status, notSession.json.error.code], id).toEqual([404, "resource_missing"]);
    }
    expect((await stack.api.get("/v1/resources", { key: dashboard.key })).status).toBe(200);
    expect((await stack.api.get("/v1/resources", { key: restricted.secret })).status).toBe(200);
  });
});

describe("a refused key's requests", () => {
  it("are limited per key before they are recorded, and recorded without the text their client chose", async () => {
    const account = await stack.newAccount();
    const reader = await account.key("secret", "live");
    const revoked = await account.key("restricted", "live", { scopes: ["resources:read"] });
    await stack.admin.revokeKey({ keyId: revoked.id, reason: "test" });
    const notice = "Security notice: rotate your keys at https://evil.invalid";
    const started = Date.now();
    const answers = [];
    for (let i = 0; i < 4 * RATE; i++) {
      answers.push(
        await stack.api.get(`/v1/resources/${encodeURIComponent(notice)}?note=${encodeURIComponent(notice)}`, {
          key: revoked.secret,
          headers: { "user-agent": notice },
        }),
      );
    }
    const seconds = (Date.now() - started) / 1000;
    const refused = answers.filter((a) => a.status === 401);
    const limited = answers.filter((a) => a.status === 429);
    console.log(`refused key: ${answers.length} requests in ${seconds.toFixed(2)} s: ${refused.length} answered 401, ${limited.length} 429`);
    expect(refused.length + limited.length).toBe(answers.length);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]!.json.error.code).toBe("rate_limited");
    // The key's bucket: RATE at once, then RATE per second.
    expect(refused.length).toBeLessThanOrEqual(RATE + Math.ceil(seconds * RATE) + 1);

    const logs = await eventually(
      async () => {
        const page = await stack.api.get(`/v1/request_logs?api_key=${revoked.id}&limit=100`, { key: reader.secret });
        expect(page.json.data).toHaveLength(refused.length);
        return page.json.data as Record<string, unknown>[];
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(logs.map((l) => l["id"]).sort()).toEqual(refused.map((a) => a.headers["request-id"]).sort());
    for (const log of logs) {
      expect(log).toMatchObject({
        status: 401,
        error_code: "api_key_revoked",
        path: "/v1/resources/:id",
        user_agent: null,
        request_params: null,
        idempotency_key: null,
      });
    }
    expect(JSON.stringify(logs)).not.toContain("evil");
  });

  it("a POST of a revoked key keeps no Idempotency-Key or body in its record", async () => {
    const account = await stack.newAccount();
    const reader = await account.key("secret", "test");
    const revoked = await account.key("secret", "test");
    await stack.admin.revokeKey({ keyId: revoked.id, reason: "test" });
    const answer = await stack.api.post("/v1/resources", {
      key: revoked.secret,
      json: { name: "evil.invalid" },
      headers: { "idempotency-key": "evil.invalid" },
    });
    expect(answer.status).toBe(401);
    const log = await eventually(
      async () => {
        const found = await stack.api.get(`/v1/request_logs/${answer.headers["request-id"]}`, { key: reader.secret });
        expect(found.status).toBe(200);
        return found.json;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(log).toMatchObject({ path: "/v1/resources", idempotency_key: null, request_params: null, user_agent: null });
    expect(JSON.stringify(log)).not.toContain("evil");
  });
});
