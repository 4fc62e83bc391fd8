import { AdminService, ResourceService, createClient } from "@rms/proto";
import { startCore, type RunningCore } from "@rms/core";
import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { CoreClients } from "../core.js";
import { ADMIN_TOKEN, startStack, type Stack } from "../testutil/harness.js";

// Counts the gateway's calls to core by method, to show one call per public request.
const calls: string[] = [];
function counting(core: CoreClients): CoreClients {
  const count = <T extends object>(client: T): T =>
    new Proxy(client, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== "function" || property === "close") return value;
        return (...args: unknown[]) => {
          calls.push(String(property));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  return { ...core, resources: count(core.resources), admin: count(core.admin), health: core.health, close: core.close };
}

let stack: Stack;
/** A second core process over the same database, that the gateway does not talk to. */
let otherCore: RunningCore;
let otherAdmin: ReturnType<typeof createClient<typeof AdminService>>;
beforeAll(async () => {
  stack = await startStack({ wrapCore: counting });
  otherCore = await startCore({ mongoUri: stack.mongoUri, databaseName: stack.databaseName, adminToken: ADMIN_TOKEN });
  otherAdmin = createClient(AdminService, otherCore.address, { metadata: { authorization: `Bearer ${ADMIN_TOKEN}` } });
});
afterAll(async () => {
  otherAdmin?.close();
  await otherCore?.stop(1_000);
  await stack?.stop();
});

it("a verified key costs one core call per request: VerifyKey once, then only the operation", async () => {
  const account = await stack.newAccount();
  const { secret } = await account.key("secret");
  calls.length = 0;
  expect((await stack.api.get("/v1/resources", { key: secret })).status).toBe(200);
  expect(calls).toEqual(["verifyKey", "listResources"]);
  calls.length = 0;
  const created = await stack.api.post("/v1/resources", { key: secret, form: { name: "one call" }, headers: { "Idempotency-Key": "one-call" } });
  expect(created.status).toBe(201);
  expect((await stack.api.get(`/v1/resources/${created.json.id}`, { key: secret })).status).toBe(200);
  expect(calls).toEqual(["createResource", "getResource"]);
});

it("a key revoked through another core is refused on its very next request through this gateway, cached or not", async () => {
  const account = await stack.newAccount();
  const { secret, id } = await account.key("secret");
  const created = await stack.api.post("/v1/resources", { key: secret, form: { name: "before" } });
  expect(created.status).toBe(201);
  await otherAdmin.revokeKey({ keyId: id, reason: "test" });
  calls.length = 0;
  const refused = await stack.api.get(`/v1/resources/${created.json.id}`, { key: secret });
  expect(refused.status).toBe(401);
  expect(refused.json.error.code).toBe("api_key_revoked");
  // Refused by core within the operation call (the cached principal was used), and dropped from the cache:
  expect(calls).toEqual(["getResource"]);
  for (const send of [
    () => stack.api.post(`/v1/resources/${created.json.id}`, { key: secret, form: { name: "after" } }),
    () => stack.api.delete(`/v1/resources/${created.json.id}`, { key: secret }),
    () => stack.api.post("/v1/resources", { key: secret, form: { name: "new" } }),
    () => stack.api.get("/v1/resources", { key: secret }),
  ]) {
    const response = await send();
    expect(response.status).toBe(401);
    expect(response.json.error.code).toBe("api_key_revoked");
  }
  // Nothing was written after the revocation.
  const current = await stack.admin.verifyKey({ secret }).catch((error: { code: string }) => error.code);
  expect(current).toBe("api_key_revoked");
});

it("a cached key past its expiry is refused by the operation call with api_key_expired", async () => {
  const account = await stack.newAccount();
  const expiresAt = Math.floor(Date.now() / 1000) + 2;
  const { secret } = await account.key("secret", "test", { expiresAt });
  expect((await stack.api.get("/v1/resources", { key: secret })).status).toBe(200);
  // Core judges expiry on its own clock (no injected one yet), so this polls until the key has expired there.
  const refused = await eventually(
    async () => {
      calls.length = 0;
      const response = await stack.api.get("/v1/resources", { key: secret });
      expect(response.json.error?.code).toBe("api_key_expired");
      return response;
    },
    { timeoutMs: 10_000, intervalMs: 100 },
  );
  expect(refused.status).toBe(401);
  expect(calls).toEqual(["listResources"]);
});

it("a recorded response is not replayed to a key revoked since (the replay reaches no operation call)", async () => {
  const account = await stack.newAccount();
  const { secret, id } = await account.key("secret");
  const headers = { "Idempotency-Key": "replay-after-revoke" };
  expect((await stack.api.post("/v1/resources", { key: secret, form: { name: "x" }, headers })).status).toBe(201);
  expect((await stack.api.post("/v1/resources", { key: secret, form: { name: "x" }, headers })).headers["idempotent-replayed"]).toBe("true");
  await otherAdmin.revokeKey({ keyId: id, reason: "test" });
  const refused = await stack.api.post("/v1/resources", { key: secret, form: { name: "x" }, headers });
  expect(refused.status).toBe(401);
  expect(refused.json.error.code).toBe("api_key_revoked");
});

it("a key cannot act for another tenant: core checks the presented key against the call's tenant", async () => {
  const mine = await stack.newAccount();
  const theirs = await stack.newAccount();
  const { secret, id } = await mine.key("secret");
  const resources = createClient(ResourceService, stack.coreAddress, {
    metadata: { authorization: `Bearer ${ADMIN_TOKEN}`, "rms-api-key": secret, "rms-api-key-id": id },
  });
  try {
    const codeFor = (accountId: string) =>
      resources.getResource({ tenant: { accountId, livemode: false }, id: "res_00000000000000000000000000" }).then(
        () => "ok",
        (error: { code: string }) => error.code,
      );
    expect(await codeFor(mine.id)).toBe("resource_missing");
    expect(await codeFor(theirs.id)).toBe("api_key_invalid");
  } finally {
    resources.close();
  }
});
