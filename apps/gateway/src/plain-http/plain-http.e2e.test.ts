import { status as GrpcStatus } from "@grpc/grpc-js";
import { RpcError, keyHash } from "@rms/proto";
import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pino } from "pino";
import { connectCore, type CoreClients } from "../core.js";
import { MongoPendingRevocationStore, PENDING_REVOCATIONS_COLLECTION } from "../revocation/pending-store.js";
import { KeyRevoker } from "../revocation/revoker.js";
import { ADMIN_TOKEN, startStack, type Stack } from "../testutil/harness.js";
import { plainRequest, rawExchange } from "../testutil/raw.js";

// Plain HTTP end to end: the real gateway (HTTPS and plain listeners), the real core, the test database.
// This gateway trusts 127.0.0.1 as a TLS-terminating proxy; requests from 127.0.0.2 come from an untrusted peer.

/** While true, core's RevokeKey is unreachable for the gateway (VerifyKey still works). */
let revokeUnreachable = false;
let t: Stack;
let mongo: MongoClient;
beforeAll(async () => {
  t = await startStack({
    trustedProxies: ["127.0.0.1"],
    wrapCore: (core): CoreClients => ({
      ...core,
      health: (...args) => core.health(...args),
      close: () => core.close(),
      admin: new Proxy(core.admin, {
        get(target, property, receiver) {
          if (property === "revokeKey" && revokeUnreachable)
            return () => Promise.reject(new RpcError(GrpcStatus.UNAVAILABLE, { type: "api_error", code: "service_unavailable", message: "down" }));
          return Reflect.get(target, property, receiver) as unknown;
        },
      }),
    }),
  });
  mongo = new MongoClient(t.mongoUri);
});
afterAll(async () => {
  await mongo?.close();
  await t?.stop();
});

/** Waits (bounded) until `check` holds; `what` names it when it never does. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  await eventually(async () => expect(await check(), what).toBe(true), { timeoutMs: 10_000, intervalMs: 100 });
}

async function freshKey(kind: "secret" | "restricted" = "secret"): Promise<string> {
  const account = await t.newAccount();
  return (await account.key(kind, "test", kind === "restricted" ? { scopes: ["resources:read"] } : {})).secret;
}

function expectHttpsRequired(response: { status: number; json: any }) {
  expect(response.status).toBe(403);
  expect(response.json.error).toMatchObject({ type: "invalid_request_error", code: "https_required" });
}

describe("plain HTTP revokes every secret or restricted key it sees", () => {
  const b64 = (text: string) => Buffer.from(text).toString("base64");
  const placements: [string, (key: string) => Parameters<typeof plainRequest>[1]][] = [
    ["Authorization without a scheme", (key) => ({ path: "/v1/resources", headers: { authorization: key } })],
    ["Authorization: bearer (lower case)", (key) => ({ path: "/v1/resources", headers: { authorization: `bearer ${key}` } })],
    ["Basic with the key as password", (key) => ({ path: "/v1/resources", headers: { authorization: `Basic ${b64(`me:${key}`)}` } })],
    ["the query string", (key) => ({ path: `/v1/resources?api_key=${key}` })],
    [
      "a form body",
      (key) => ({
        method: "POST",
        path: "/v1/resources",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `name=x&key=${encodeURIComponent(key)}`,
      }),
    ],
    [
      "a JSON body, \\u-escaped",
      (key) => ({
        method: "POST",
        path: "/v1/resources",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "x", key }).replace('"sk_', '"\\u0073k_').replace('"rk_', '"\\u0072k_'),
      }),
    ],
    [
      "a body of another type on an unknown path",
      (key) => ({ method: "PUT", path: "/nowhere", headers: { "content-type": "text/plain" }, body: `my key is ${key}.` }),
    ],
  ];

  it.each(placements)("in %s: 403 https_required, and the key is revoked in core", async (_where, placement) => {
    const secret = await freshKey();
    const restricted = await freshKey("restricted");
    for (const key of [secret, restricted]) {
      expectHttpsRequired(await plainRequest(t.gateway.httpPort!, placement(key)));
      expect(await t.coreVerdict(key)).toBe("api_key_revoked");
      expect((await t.api.get("/v1/resources", { key })).json.error.code).toBe("api_key_revoked");
    }
  });

  it("in a body over the size limit: still 403 https_required (not 413), and the key near its start is revoked", async () => {
    const key = await freshKey();
    const body = `key=${key}&pad=${"a".repeat(2 * 1024 * 1024)}`;
    const response = await plainRequest(t.gateway.httpPort!, {
      method: "POST",
      path: "/v1/resources",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body,
    }).catch((error: Error) => ({ status: 0, json: { error: { code: error.message } }, headers: {} }));
    expectHttpsRequired(response);
    expect(await t.coreVerdict(key)).toBe("api_key_revoked");
  });

  it("in headers over the size limit: 403 https_required (not 413), and the key is revoked", async () => {
    const key = await freshKey();
    const oversize = (key: string) => `GET /v1/resources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Pad: ${"a".repeat(64 * 1024)}\r\n\r\n`;
    // From the trusted proxy it may have been HTTPS: the usual 413, the key kept.
    const trusted = await freshKey();
    expect(await rawExchange(t.gateway.httpPort!, oversize(trusted))).toMatch(/^HTTP\/1\.1 413 /);
    expect(await t.coreVerdict(trusted)).toBe("valid");
    const answer = await rawExchange(t.gateway.httpPort!, oversize(key), "127.0.0.2");
    expect(answer).toMatch(/^HTTP\/1\.1 403 /);
    expect(answer).toContain('"code":"https_required"');
    expect(answer).toMatch(/Stripe-Should-Retry: false/i);
    expect(await t.coreVerdict(key)).toBe("api_key_revoked");
  });

  it("leaves publishable keys alone", async () => {
    const account = await t.newAccount();
    const { secret } = await account.key("publishable");
    expectHttpsRequired(await plainRequest(t.gateway.httpPort!, { path: "/v1/resources", headers: { authorization: `Bearer ${secret}` } }));
    expect(await t.coreVerdict(secret)).toBe("valid");
  });
});

describe("X-Forwarded-Proto over the plain listener", () => {
  it("serves a trusted proxy's https, but not when the client wrote https and the proxy appended http", async () => {
    const served = await freshKey();
    expect(
      (await plainRequest(t.gateway.httpPort!, { path: "/v1/resources", headers: { authorization: `Bearer ${served}`, "x-forwarded-proto": "http, https" } }))
        .status,
    ).toBe(200);

    for (const proto of ["https, http", ["https", "http"], "HTTP", ""]) {
      const key = await freshKey();
      expectHttpsRequired(
        await plainRequest(t.gateway.httpPort!, { path: "/v1/resources", headers: { authorization: `Bearer ${key}`, "x-forwarded-proto": proto } }),
      );
      expect(await t.coreVerdict(key)).toBe("api_key_revoked");
    }
  });

  it("ignores X-Forwarded-Proto: https from an untrusted peer, and revokes its key", async () => {
    const key = await freshKey();
    const response = await plainRequest(t.gateway.httpPort!, {
      path: "/v1/resources",
      headers: { authorization: `Bearer ${key}`, "x-forwarded-proto": "https" },
      localAddress: "127.0.0.2",
    });
    expectHttpsRequired(response);
    expect(await t.coreVerdict(key)).toBe("api_key_revoked");
  });
});

describe("a revocation core cannot take now", () => {
  it("is kept pending in the database, the key is refused meanwhile, and it is retried until core has revoked it", async () => {
    const key = await freshKey();
    const pending = mongo.db(t.databaseName).collection(PENDING_REVOCATIONS_COLLECTION);
    revokeUnreachable = true;
    try {
      expectHttpsRequired(await plainRequest(t.gateway.httpPort!, { path: "/v1/resources", headers: { authorization: `Bearer ${key}` } }));
      expect(await t.coreVerdict(key)).toBe("valid");
      expect(await pending.countDocuments({ _id: keyHash(key) as never })).toBe(1);
      // Only the key's hash is kept (CONTRACT.md section 4, in ../shared/docs/): no field of any pending record holds the secret.
      const records = await pending.find({}).toArray();
      expect(records.length).toBeGreaterThan(0);
      for (const record of records) expect(Object.keys(record).sort()).toEqual(["_id", "since"]);
      expect(JSON.stringify(records)).not.toContain(key);
      // Core still takes the key, the gateway does not.
      const refused = await t.api.get("/v1/resources", { key });
      expect(refused.status).toBe(401);
      expect(refused.json.error.code).toBe("api_key_revoked");
    } finally {
      revokeUnreachable = false;
    }
    await until(async () => (await t.coreVerdict(key)) === "api_key_revoked", "the pending revocation reached core");
    await until(async () => (await pending.countDocuments({ _id: keyHash(key) as never })) === 0, "the pending record was removed");
  });

  it("survives a restart: a gateway that starts later finds the pending revocation and completes it", async () => {
    const key = await freshKey("restricted");
    const db = mongo.db(t.databaseName);
    // What a gateway that stopped before core came back left behind.
    await new MongoPendingRevocationStore(db).add({ hash: keyHash(key), since: new Date() });
    const core = connectCore(t.coreAddress, ADMIN_TOKEN);
    const revoker = new KeyRevoker(core, new MongoPendingRevocationStore(db), pino({ level: "silent" }), { retryMs: 60_000 });
    try {
      await until(async () => (await t.coreVerdict(key)) === "api_key_revoked", "the restarted gateway revoked the key");
      await until(
        async () => (await db.collection(PENDING_REVOCATIONS_COLLECTION).countDocuments({ _id: keyHash(key) as never })) === 0,
        "the record was removed",
      );
    } finally {
      revoker.close();
      core.close();
    }
  });
});

// Issue 31, item 5 (CONTRACT.md section 1): a key sent as plain HTTP to the HTTPS port is revoked the same way,
// then answered 403 (TLS used to refuse the bytes with ERR_SSL_HTTP_REQUEST and close, the key still valid).
describe("plain HTTP sent to the HTTPS port", () => {
  it("revokes a secret or restricted key in a request and answers 403 https_required; HTTPS still works on the port", async () => {
    for (const key of [await freshKey(), await freshKey("restricted")]) {
      const response = await plainRequest(t.gateway.httpsPort, {
        path: "/v1/resources",
        headers: { authorization: `Bearer ${key}` },
        localAddress: "127.0.0.2",
      });
      expectHttpsRequired(response);
      expect(await t.coreVerdict(key)).toBe("api_key_revoked");
      expect((await t.api.get("/v1/resources", { key })).json.error.code).toBe("api_key_revoked");
    }
    const healthy = await freshKey();
    expect((await t.api.get("/v1/resources", { key: healthy })).status).toBe(200);
  });

  it("scans a request it cannot parse too (headers over the limit): 403, the key revoked", async () => {
    const key = await freshKey();
    const oversize = `GET /v1/resources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nX-Pad: ${"a".repeat(64 * 1024)}\r\n\r\n`;
    const answer = await rawExchange(t.gateway.httpsPort, oversize, "127.0.0.2");
    expect(answer).toMatch(/^HTTP\/1\.1 403 /);
    expect(answer).toContain('"code":"https_required"');
    expect(await t.coreVerdict(key)).toBe("api_key_revoked");
  });
});
