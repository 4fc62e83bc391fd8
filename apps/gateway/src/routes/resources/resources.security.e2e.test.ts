import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiClient, ApiResponse } from "../../testutil/client.js";
import { startStack, type KeyKindName, type Mode, type Stack } from "../../testutil/harness.js";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

type Endpoint = "list" | "create" | "retrieve" | "update" | "delete";
const ENDPOINTS: Endpoint[] = ["list", "create", "retrieve", "update", "delete"];
const WRITES = new Set<Endpoint>(["create", "update", "delete"]);

function call(api: ApiClient, endpoint: Endpoint, key: string, id: string): Promise<ApiResponse> {
  switch (endpoint) {
    case "list":
      return api.get("/v1/resources", { key });
    case "create":
      return api.post("/v1/resources", { key, form: { name: "by matrix" } });
    case "retrieve":
      return api.get(`/v1/resources/${id}`, { key });
    case "update":
      return api.post(`/v1/resources/${id}`, { key, form: { status: "paused" } });
    case "delete":
      return api.delete(`/v1/resources/${id}`, { key });
  }
}

describe("scope matrix: key kind x mode x endpoint", () => {
  const kinds: { label: string; kind: KeyKindName; scopes?: string[]; allowed: (e: Endpoint) => string | undefined }[] = [
    { label: "secret", kind: "secret", allowed: () => undefined },
    { label: "publishable", kind: "publishable", allowed: (e) => (WRITES.has(e) ? "publishable_key_read_only" : undefined) },
    { label: "restricted resources:read", kind: "restricted", scopes: ["resources:read"], allowed: (e) => (WRITES.has(e) ? "insufficient_scope" : undefined) },
    {
      label: "restricted resources:write",
      kind: "restricted",
      scopes: ["resources:write"],
      allowed: (e) => (WRITES.has(e) ? undefined : "insufficient_scope"),
    },
    { label: "restricted read+write", kind: "restricted", scopes: ["resources:read", "resources:write"], allowed: () => undefined },
    { label: "restricted jobs:write", kind: "restricted", scopes: ["jobs:write"], allowed: () => "insufficient_scope" },
  ];
  const modes: Mode[] = ["test", "live"];
  const cases = kinds.flatMap((k) => modes.flatMap((mode) => ENDPOINTS.map((endpoint) => [k.label, mode, endpoint, k] as const)));

  it.each(cases)("%s key, %s mode: %s", async (_label, mode, endpoint, k) => {
    const account = await stack.newAccount();
    const secret = (await account.key("secret", mode)).secret;
    const key = (await account.key(k.kind, mode, k.scopes ? { scopes: k.scopes } : {})).secret;
    const target = (await stack.api.post("/v1/resources", { key: secret, form: { name: "target" } })).json.id as string;
    const response = await call(stack.api, endpoint, key, target);
    const refusal = k.allowed(endpoint);
    if (refusal) {
      expect(response.status).toBe(403);
      expect(response.json.error).toMatchObject({ type: "permission_error", code: refusal });
      // Nothing happened to the resource.
      const after = await stack.api.get(`/v1/resources/${target}`, { key: secret });
      expect(after.json.status).toBe("active");
    } else {
      expect(response.status).toBe(endpoint === "create" ? 201 : 200);
    }
  });
});

describe("tenancy: other accounts and the other mode see nothing", () => {
  it("answers 404 resource_missing for an id of another account or mode, and changes nothing", async () => {
    const owner = await stack.newAccount();
    const ownerKey = (await owner.key("secret", "test")).secret;
    const stranger = (await (await stack.newAccount()).key("secret", "test")).secret;
    const ownerLive = (await owner.key("secret", "live")).secret;
    const created = await stack.api.post("/v1/resources", { key: ownerKey, json: { name: "private", metadata: { a: "1" } } });
    const id = created.json.id as string;

    for (const key of [stranger, ownerLive]) {
      for (const response of [
        await stack.api.get(`/v1/resources/${id}`, { key }),
        await stack.api.post(`/v1/resources/${id}`, { key, form: { name: "stolen" } }),
        await stack.api.delete(`/v1/resources/${id}`, { key }),
      ]) {
        expect(response.status).toBe(404);
        expect(response.json.error).toMatchObject({ type: "invalid_request_error", code: "resource_missing" });
      }
      const listed = await stack.api.get("/v1/resources", { key });
      expect(listed.json.data.map((r: { id: string }) => r.id)).not.toContain(id);
    }
    const after = await stack.api.get(`/v1/resources/${id}`, { key: ownerKey });
    expect(after.text).toBe(created.text);
  });

  it("keeps live and test data apart in lists", async () => {
    const account = await stack.newAccount();
    const test = (await account.key("secret", "test")).secret;
    const live = (await account.key("secret", "live")).secret;
    await stack.api.post("/v1/resources", { key: test, form: { name: "test one" } });
    await stack.api.post("/v1/resources", { key: live, form: { name: "live one" } });
    expect((await stack.api.get("/v1/resources", { key: test })).json.data.map((r: { name: string }) => r.name)).toEqual(["test one"]);
    expect((await stack.api.get("/v1/resources", { key: live })).json.data.map((r: { name: string }) => r.name)).toEqual(["live one"]);
  });
});

describe("plain HTTP", () => {
  it.each([
    ["secret", "test"],
    ["secret", "live"],
    ["restricted", "live"],
  ] as const)("refuses a %s %s key with 403, performs nothing, and revokes the key", async (kind, mode) => {
    const account = await stack.newAccount();
    const admin = (await account.key("secret", mode)).secret;
    const leaked = (await account.key(kind, mode, kind === "restricted" ? { scopes: ["resources:read", "resources:write"] } : {})).secret;
    const response = await stack.plain.post("/v1/resources", { key: leaked, form: { name: "over http" } });
    expect(response.status).toBe(403);
    expect(response.json.error).toMatchObject({ type: "invalid_request_error", code: "https_required" });
    expect(response.text).not.toContain(leaked);

    const next = await stack.api.get("/v1/resources", { key: leaked });
    expect(next.status).toBe(401);
    expect(next.json.error.code).toBe("api_key_revoked");
    expect(next.headers["www-authenticate"]).toBe("Bearer");
    // The create was not performed.
    expect((await stack.api.get("/v1/resources", { key: admin })).json.data).toEqual([]);
  });

  it("does not revoke a publishable key", async () => {
    const account = await stack.newAccount();
    const publishable = (await account.key("publishable", "test")).secret;
    expect((await stack.plain.get("/v1/resources", { key: publishable })).status).toBe(403);
    expect((await stack.api.get("/v1/resources", { key: publishable })).status).toBe(200);
  });

  it("ignores X-Forwarded-Proto from a peer that is not a trusted proxy", async () => {
    const account = await stack.newAccount();
    const key = (await account.key("secret", "test")).secret;
    const response = await stack.plain.get("/v1/resources", { key, headers: { "x-forwarded-proto": "https" } });
    expect(response.status).toBe(403);
    expect((await stack.api.get("/v1/resources", { key })).json.error.code).toBe("api_key_revoked");
  });
});

describe("behind a trusted TLS-terminating proxy", () => {
  let proxied: Stack;
  beforeAll(async () => {
    proxied = await startStack({ trustedProxies: ["127.0.0.1"] });
  });
  afterAll(() => proxied.stop());

  it("serves a plain-HTTP request that the proxy marks as https", async () => {
    const account = await proxied.newAccount();
    const key = (await account.key("secret", "test")).secret;
    const created = await proxied.plain.post("/v1/resources", { key, form: { name: "via proxy" }, headers: { "x-forwarded-proto": "https" } });
    expect(created.status).toBe(201);
    const refused = await proxied.plain.get("/v1/resources", { key, headers: { "x-forwarded-proto": "http" } });
    expect(refused.status).toBe(403);
  });
});
