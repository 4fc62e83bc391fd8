import { RELEASE } from "@rms/config";
import { Server, ServerCredentials, status as GrpcStatus } from "@grpc/grpc-js";
import { DATABASE_SLOW_MS, ResourceService, RpcError, addService, createClient, keyHash, type CallOptions } from "@rms/proto";
import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CoreClients } from "./core.js";
import { startStack, type Stack } from "./testutil/harness.js";
import { databaseRelay } from "./testutil/relay.js";
import { plainRequest } from "./testutil/raw.js";

// The gateway's own rules (headers, parsing, errors, scopes, plain HTTP) over the real core and the test database.

/** Every call the gateway makes to core, in order; the calls themselves go to the real core. */
const calls: { method: string; request: any; metadata: Readonly<Record<string, string>> }[] = [];
/** While set, the gateway's resource calls go to this client instead of core's (a stub server that answers with errors). */
let resourcesVia: CoreClients["resources"] | undefined;

function recorded<T extends object>(client: T, route: () => T | undefined = () => undefined): T {
  return new Proxy(client, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof property !== "string" || typeof value !== "function") return value;
      return (request: unknown, options?: CallOptions) => {
        calls.push({ method: property, request, metadata: { ...options?.metadata } });
        const to = route() ?? target;
        return (Reflect.get(to, property) as (r: unknown, o?: CallOptions) => Promise<unknown>).call(to, request, options);
      };
    },
  });
}

let t: Stack;
let keys: { secret: string; publishable: string; readOnly: string; writeOnly: string };
beforeAll(async () => {
  t = await startStack({
    trustedProxies: ["127.0.0.1"],
    wrapCore: (core) => ({
      ...core,
      resources: recorded(core.resources, () => resourcesVia),
      admin: recorded(core.admin),
      health: (...args) => core.health(...args),
      close: () => core.close(),
    }),
  });
  const account = await t.newAccount();
  keys = {
    secret: (await account.key("secret")).secret,
    publishable: (await account.key("publishable")).secret,
    readOnly: (await account.key("restricted", "test", { scopes: ["resources:read"] })).secret,
    writeOnly: (await account.key("restricted", "test", { scopes: ["resources:write"] })).secret,
  };
});
afterAll(async () => {
  await t?.stop();
});

function expectEnvelope(response: { status: number; json: any; headers: Record<string, string | undefined> }, status: number, code: string, param?: string) {
  expect(response.status).toBe(status);
  expect(Object.keys(response.json)).toEqual(["error"]);
  const error = response.json.error;
  expect(Object.keys(error)).toEqual(["type", "code", "message", ...(param !== undefined ? ["param"] : []), "request_id"]);
  expect(error.code).toBe(code);
  if (param !== undefined) expect(error.param).toBe(param);
  expect(error.request_id).toBe(response.headers["request-id"]);
}

describe("every response", () => {
  it("carries Request-Id, Api-Version and the JSON content type, errors too", async () => {
    const responses = [
      await t.api.get("/v1/status"),
      await t.api.get("/v1/resources", { key: keys.secret }),
      await t.api.get("/v1/resources"),
      await t.api.get("/nope"),
      await t.plain.get("/v1/status"),
    ];
    const ids = new Set<string>();
    for (const response of responses) {
      expect(response.headers["request-id"]).toMatch(/^req_[0-9A-Za-z]{24}$/);
      // No browser guesses another type than the one sent (a JSON answer holding client text is never run as HTML).
      expect(response.headers["x-content-type-options"]).toBe("nosniff");
      expect(response.headers["api-version"]).toBe("1.4");
      expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(response.headers["x-powered-by"]).toBeUndefined();
      expect(response.headers["etag"]).toBeUndefined();
      ids.add(response.headers["request-id"]!);
    }
    expect(ids.size).toBe(responses.length);
  });

  it("carries X-Content-Type-Options: nosniff on every other kind of answer too", async () => {
    const responses = [
      await t.api.get("/v1/openapi.json"),
      await t.api.post("/v1/resources", { key: keys.secret, json: { name: "sniffed" } }),
      await t.api.delete("/v1/status"),
      await t.api.send("OPTIONS", "/v1/resources", { headers: { origin: "https://app.invalid", "access-control-request-method": "POST" } }),
      await t.api.post("/v1/resources", { key: keys.secret, body: "{", headers: { "content-type": "application/json" } }),
    ];
    for (const response of responses) expect([response.status, response.headers["x-content-type-options"]]).toEqual([response.status, "nosniff"]);
  });

  it("sends the request id to core", async () => {
    const response = await t.api.get("/v1/resources", { key: keys.secret });
    const call = calls.findLast((c) => c.method === "listResources")!;
    expect(call.metadata["rms-request-id"]).toBe(response.headers["request-id"]);
  });
});

describe("routing", () => {
  it("answers an unknown path with 404 route_missing, before asking for a key", async () => {
    expectEnvelope(await t.api.get("/v1/nothing"), 404, "route_missing");
    expectEnvelope(await t.api.post("/v2/resources", { key: keys.secret }), 404, "route_missing");
  });

  it.each([
    ["PUT", "/v1/resources", "GET, POST"],
    ["DELETE", "/v1/resources", "GET, POST"],
    ["PATCH", "/v1/resources/res_1", "GET, POST, DELETE"],
    ["POST", "/v1/status", "GET"],
  ])("answers %s %s with 405 and Allow: %s", async (method, path, allow) => {
    const response = await t.api.send(method, path, { key: keys.secret });
    expectEnvelope(response, 405, "method_not_allowed");
    expect(response.headers["allow"]).toBe(allow);
  });

  it.each([
    ["/v1/resources", "GET, POST"],
    ["/v1/resources/res_1", "GET, POST, DELETE"],
    ["/v1/status", "GET"],
    ["/v1/openapi.json", "GET"],
  ])("answers HEAD %s with 405 and Allow: %s (HEAD is never listed, so never served)", async (path, allow) => {
    const before = calls.length;
    const response = await t.api.send("HEAD", path, { key: keys.secret });
    expect(response.status).toBe(405);
    expect(response.headers["allow"]).toBe(allow);
    expect(response.text).toBe("");
    expect(calls.slice(before)).toEqual([]);
  });

  it("echoes at most a bounded part of the input in an error", async () => {
    const id = `res_${"x".repeat(15_000)}`;
    const response = await t.api.get(`/v1/resources/${id}`, { key: keys.secret });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.json.error.message.length).toBeLessThanOrEqual(501);
    expect(response.text.length).toBeLessThan(2_000);
    const unknown = await t.api.get(`/v1/resources?${"p".repeat(15_000)}=1`, { key: keys.secret });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.code).toBe("parameter_unknown");
    expect(unknown.json.error.param.length).toBeLessThanOrEqual(201);
    expect(unknown.text.length).toBeLessThan(2_000);
  });
});

describe("cross-origin (browsers with publishable keys)", () => {
  it("answers a preflight on a known path with 204 and its methods", async () => {
    const response = await t.api.send("OPTIONS", "/v1/resources/res_1", {
      headers: { origin: "https://shop.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization" },
    });
    expect(response.status).toBe(204);
    expect(response.headers["access-control-allow-origin"]).toBe("*");
    expect(response.headers["access-control-allow-methods"]).toBe("GET, POST, DELETE");
    expect(response.headers["access-control-allow-headers"]).toContain("Authorization");
    expect(response.headers["request-id"]).toMatch(/^req_/);
  });

  it("lets a browser read the request id of any response", async () => {
    const response = await t.api.get("/v1/resources", { key: keys.publishable, headers: { origin: "https://shop.example" } });
    expect(response.status).toBe(200);
    expect(response.headers["access-control-allow-origin"]).toBe("*");
    expect(response.headers["access-control-expose-headers"]).toContain("Request-Id");
  });

  it("treats OPTIONS without a preflight header as a wrong verb", async () => {
    expect((await t.api.send("OPTIONS", "/v1/resources")).status).toBe(405);
  });
});

describe("request bodies", () => {
  it("refuses other content types with 415", async () => {
    const response = await t.api.post("/v1/resources", { key: keys.secret, body: "<name>x</name>", headers: { "content-type": "application/xml" } });
    expectEnvelope(response, 415, "unsupported_media_type");
    expectEnvelope(
      await t.api.post("/v1/resources", { key: keys.secret, body: "name=x", headers: { "content-type": "text/plain" } }),
      415,
      "unsupported_media_type",
    );
  });

  it("refuses a body over 1 MiB with 413", async () => {
    const response = await t.api.post("/v1/resources", { key: keys.secret, form: `name=${"x".repeat(1024 * 1024)}` });
    expectEnvelope(response, 413, "request_too_large");
  });

  it("refuses malformed JSON with 400 parameter_invalid", async () => {
    const response = await t.api.post("/v1/resources", { key: keys.secret, body: '{"name": ', headers: { "content-type": "application/json" } });
    expectEnvelope(response, 400, "parameter_invalid");
  });

  it("accepts a JSON charset parameter", async () => {
    const response = await t.api.post("/v1/resources", {
      key: keys.secret,
      body: '{"name":"x"}',
      headers: { "content-type": "application/json; charset=utf-8" },
    });
    expect(response.status).toBe(201);
  });

  it("gives byte-identical answers to the JSON and form versions of a request", async () => {
    const created = await t.api.post("/v1/resources", { key: keys.secret, json: { name: "base" } });
    const path = `/v1/resources/${created.json.id}`;
    // JSON.parse keeps "__proto__" as an own key; the number 5 is metadata's string "5".
    const viaJson = await t.api.post(path, {
      key: keys.secret,
      body: '{"name":"Ünïcode ✓ & more","status":"paused","metadata":{"__proto__":"p","a.b":"c","$where":"1","n":5}}',
      headers: { "content-type": "application/json" },
    });
    const viaForm = await t.api.post(path, {
      key: keys.secret,
      form: "name=%C3%9Cn%C3%AFcode+%E2%9C%93+%26+more&status=paused&metadata[__proto__]=p&metadata[a.b]=c&metadata[%24where]=1&metadata[n]=5",
    });
    expect(viaJson.status).toBe(200);
    expect(viaForm.status).toBe(200);
    expect(viaForm.text).toBe(viaJson.text);
    expect(viaJson.text).toBe(
      `{"id":"${created.json.id}","object":"resource","name":"Ünïcode ✓ & ` +
        `more","status":"paused","metadata":{"__proto__":"p","a.b":"c","$where":"1","n":"5"},"created":${created.json.created}}`,
    );
  });

  it("refuses the same parameter in both URL and body", async () => {
    expectEnvelope(await t.api.post("/v1/resources?name=a", { key: keys.secret, form: "name=b" }), 400, "parameter_invalid", "name");
  });

  it("refuses a malformed Idempotency-Key", async () => {
    expectEnvelope(
      await t.api.post("/v1/resources", { key: keys.secret, json: { name: "x" }, headers: { "idempotency-key": "x".repeat(256) } }),
      400,
      "parameter_invalid",
      "Idempotency-Key",
    );
  });
});

describe("authentication and scopes", () => {
  it("needs a key: 401 api_key_missing with WWW-Authenticate", async () => {
    const response = await t.api.get("/v1/resources");
    expectEnvelope(response, 401, "api_key_missing");
    expect(response.headers["www-authenticate"]).toBe("Bearer");
  });

  it("passes core's verdict on a key through as 401", async () => {
    const response = await t.api.get("/v1/resources", { key: "sk_test_unknown" });
    expectEnvelope(response, 401, "api_key_invalid");
    expect(response.headers["www-authenticate"]).toBe("Bearer");
  });

  it("accepts the Bearer scheme in any case (RFC 9110)", async () => {
    for (const scheme of ["bearer", "BEARER", "BeArEr"]) {
      expect((await t.api.get("/v1/resources", { headers: { authorization: `${scheme} ${keys.secret}` } })).status).toBe(200);
    }
  });

  it("tells Stripe clients which errors a retry can fix", async () => {
    expect((await t.api.get("/v1/resources")).headers["stripe-should-retry"]).toBe("false");
    expect((await t.api.get("/v1/resources", { key: keys.secret })).headers["stripe-should-retry"]).toBeUndefined();
  });

  it("accepts the key as Basic user name, as Stripe clients send it", async () => {
    const basic = Buffer.from(`${keys.secret}:`).toString("base64");
    expect((await t.api.get("/v1/resources", { headers: { authorization: `Basic ${basic}` } })).status).toBe(200);
  });

  it.each([
    ["publishable", "GET", "/v1/resources", 200, undefined],
    ["publishable", "POST", "/v1/resources", 403, "publishable_key_read_only"],
    ["publishable", "DELETE", "/v1/resources/res_x", 403, "publishable_key_read_only"],
    ["readOnly", "GET", "/v1/resources", 200, undefined],
    ["readOnly", "POST", "/v1/resources", 403, "insufficient_scope"],
    ["writeOnly", "GET", "/v1/resources", 403, "insufficient_scope"],
    ["writeOnly", "GET", "/v1/resources/res_x", 403, "insufficient_scope"],
    ["writeOnly", "POST", "/v1/resources", 201, undefined],
  ] as const)("%s key: %s %s -> %i", async (kind, method, path, status, code) => {
    const response = await t.api.send(method, path, { key: keys[kind], ...(method === "POST" ? { json: { name: "n" } } : {}) });
    if (code) expectEnvelope(response, status, code);
    else expect(response.status).toBe(status);
  });

  it("answers a core error outside the catalogue with a generic 500", async () => {
    // A real gRPC server in place of core's ResourceService whose every call fails with a code the gateway does not know.
    const bug = new RpcError(GrpcStatus.INVALID_ARGUMENT, {
      type: "invalid_request_error",
      code: "store_crashed",
      message: "TypeError: cannot read properties of undefined (at /srv/core/store.js:12)",
    });
    const server = new Server();
    const fail = () => Promise.reject(bug);
    addService(server, ResourceService, {
      createResource: fail,
      getResource: fail,
      updateResource: fail,
      deleteResource: fail,
      listResources: fail,
      searchResources: fail,
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
    );
    const stub = createClient(ResourceService, `127.0.0.1:${port}`, { timeoutMs: 5_000 });
    resourcesVia = stub;
    try {
      const response = await t.api.get("/v1/resources", { key: keys.secret });
      expectEnvelope(response, 500, "internal_error");
      expect(response.json.error.type).toBe("api_error");
      expect(response.text).not.toMatch(/TypeError|store\.js|store_crashed/);
      expect(calls.findLast((c) => c.method === "listResources")?.metadata["rms-request-id"]).toBe(response.headers["request-id"]);
    } finally {
      resourcesVia = undefined;
      stub.close();
      server.forceShutdown();
    }
  });
});

describe("plain HTTP", () => {
  it("refuses everything with 403 https_required and performs nothing", async () => {
    const before = calls.length;
    const response = await t.plain.post("/v1/resources", { form: { name: "x" } });
    expectEnvelope(response, 403, "https_required");
    expect(response.json.error.type).toBe("invalid_request_error");
    expect(calls.slice(before).map((c) => c.method)).toEqual([]);
    expectEnvelope(await t.plain.get("/v1/status"), 403, "https_required");
    expectEnvelope(await t.plain.get("/nowhere"), 403, "https_required");
  });

  it("revokes a secret or restricted key sent over it, not a publishable one", async () => {
    const account = await t.newAccount();
    const leaked = {
      secret: await account.key("secret"),
      restricted: await account.key("restricted", "test", { scopes: ["resources:read"] }),
      publishable: await account.key("publishable"),
    };
    const before = calls.length;
    for (const key of Object.values(leaked)) expectEnvelope(await t.plain.get("/v1/resources", { key: key.secret }), 403, "https_required");
    const revokes = calls.slice(before).filter((c) => c.method === "revokeKey");
    // Revoked by the secret seen (its hash), not by id (issue 31 item 7): only what was presented can be revoked.
    const revoked = revokes.map((c) => c.request.secretHash || keyHash(c.request.secret));
    expect(revoked).toEqual(expect.arrayContaining([keyHash(leaked.secret.secret), keyHash(leaked.restricted.secret)]));
    expect(revoked).not.toContain(keyHash(leaked.publishable.secret));
    expect(revokes.map((c) => c.request.reason)).toContain("seen over plain HTTP");
    expectEnvelope(await t.api.get("/v1/resources", { key: leaked.secret.secret }), 401, "api_key_revoked");
    expectEnvelope(await t.api.get("/v1/resources", { key: leaked.restricted.secret }), 401, "api_key_revoked");
    expect((await t.api.get("/v1/resources", { key: leaked.publishable.secret })).status).toBe(200);
  });

  it("ignores X-Forwarded-Proto from untrusted peers but honours it from a trusted proxy", async () => {
    // This gateway trusts 127.0.0.1, so the plain listener serves the request.
    const response = await t.plain.get("/v1/resources", { key: keys.secret, headers: { "x-forwarded-proto": "https" } });
    expect(response.status).toBe(200);
    // The same header from 127.0.0.2, a peer that is not trusted, counts for nothing: 403, and its key is revoked.
    const untrusted = (await (await t.newAccount()).key("restricted", "test", { scopes: ["resources:read"] })).secret;
    const before = calls.length;
    const refused = await plainRequest(t.gateway.httpPort!, {
      path: "/v1/resources",
      headers: { authorization: `Bearer ${untrusted}`, "x-forwarded-proto": "https" },
      localAddress: "127.0.0.2",
    });
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe("https_required");
    expect(calls.slice(before).map((c) => c.method)).toEqual(["verifyKey", "revokeKey"]);
    expectEnvelope(await t.api.get("/v1/resources", { key: untrusted }), 401, "api_key_revoked");
    // From the trusted proxy, "http" is plain HTTP too.
    const restricted = (await (await t.newAccount()).key("restricted", "test", { scopes: ["resources:read"] })).secret;
    expectEnvelope(await t.plain.get("/v1/resources", { key: restricted, headers: { "x-forwarded-proto": "http" } }), 403, "https_required");
  });
});

describe("GET /v1/status", () => {
  it("is operational without a key", async () => {
    const response = await t.api.get("/v1/status");
    expect(response.status).toBe(200);
    expect(response.text).toBe(`{"object":"status","status":"operational","version":"1.4","release":"${RELEASE}"}`);
  });
});

describe("core degraded or unreachable", () => {
  // Core's database goes through a relay that can be cut: core then reports NOT_SERVING; stopped, core is unreachable.
  let relay: Awaited<ReturnType<typeof databaseRelay>>;
  let down: Stack;
  let key: string;
  beforeAll(async () => {
    relay = await databaseRelay();
    down = await startStack({ coreMongoUri: relay.uri });
    key = (await (await down.newAccount()).key("secret")).secret;
  });
  afterAll(async () => {
    await down?.stop();
    await relay?.close();
  });

  /** GET /v1/status until it answers `status` (bounded). */
  function statusUntil(status: number) {
    return eventually(
      async () => {
        const response = await down.api.get("/v1/status");
        expect(response.status).toBe(status);
        return response;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
  }

  it("GET /v1/status is degraded with 200 while the database answers slowly (still ready), operational again when it is fast", async () => {
    expect((await down.api.get("/v1/status")).text).toBe(`{"object":"status","status":"operational","version":"1.4","release":"${RELEASE}"}`);
    relay.delayReplies(DATABASE_SLOW_MS + 500);
    try {
      const response = await eventually(
        async () => {
          const answer = await down.api.get("/v1/status");
          expect(answer.text).toBe(`{"object":"status","status":"degraded","version":"1.4","release":"${RELEASE}"}`);
          return answer;
        },
        { timeoutMs: 20_000, intervalMs: 200 },
      );
      expect(response.status).toBe(200);
      expect(response.headers["retry-after"]).toBeUndefined();
    } finally {
      relay.delayReplies(0);
    }
    await eventually(
      async () => expect((await down.api.get("/v1/status")).text).toBe(`{"object":"status","status":"operational","version":"1.4","release":"${RELEASE}"}`),
      {
        timeoutMs: 20_000,
        intervalMs: 200,
      },
    );
  });

  it("GET /v1/status is degraded with 503 when core is NOT_SERVING, operational again when it serves", async () => {
    expect((await down.api.get("/v1/status")).status).toBe(200);
    await relay.cut();
    try {
      const response = await statusUntil(503);
      expect(response.text).toBe(`{"object":"status","status":"degraded","version":"1.4","release":"${RELEASE}"}`);
      expect(response.headers["retry-after"]).toBe("1");
    } finally {
      await relay.restore();
    }
    // Right after the cut a loaded machine's database probe may still be slow (degraded with 200): wait for operational.
    await eventually(
      async () => expect((await down.api.get("/v1/status")).text).toBe(`{"object":"status","status":"operational","version":"1.4","release":"${RELEASE}"}`),
      {
        timeoutMs: 20_000,
        intervalMs: 100,
      },
    );
  });

  it("GET /v1/status is degraded with 503 when core is unreachable, and API calls get 503 without the cause", async () => {
    await down.stopCore();
    const response = await down.api.get("/v1/status");
    expect(response.status).toBe(503);
    expect(response.text).toBe(`{"object":"status","status":"degraded","version":"1.4","release":"${RELEASE}"}`);

    const call = await down.api.get("/v1/resources", { key });
    expectEnvelope(call, 503, "service_unavailable");
    expect(call.headers["retry-after"]).toBe("1");
    expect(call.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|No connection/);
  });
});
