import { AdminService, KeyKind, createClient } from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { startCore, type RunningCore } from "../server.js";

const TOKEN = "key-cache-test-admin-token-0123";
let core: RunningCore;
let admin: ReturnType<typeof createClient<typeof AdminService>>;
beforeAll(async () => {
  core = await startCore({ mongoUri: inject("mongoUri"), databaseName: testDatabaseName("core"), adminToken: TOKEN, keyCacheMs: 60_000 });
  admin = createClient(AdminService, core.address, { metadata: { authorization: `Bearer ${TOKEN}` } });
});
afterAll(async () => {
  admin.close();
  await core.stop(1_000);
});

it("with the key cache on, a revoked key is refused on its very next verification", async () => {
  const { account } = await admin.createAccount({});
  const { key, secret } = await admin.createKey({ accountId: account!.id, kind: KeyKind.SECRET, livemode: false });
  for (let i = 0; i < 3; i++) expect((await admin.verifyKey({ secret })).key?.id).toBe(key!.id);
  await admin.revokeKey({ keyId: key!.id, reason: "test" });
  await expect(admin.verifyKey({ secret })).rejects.toMatchObject({ code: "api_key_revoked" });
});

it("with the key cache on, an expired key is refused although it was cached", async () => {
  const { account } = await admin.createAccount({});
  const expiresAt = Math.floor(Date.now() / 1000) + 2;
  const { secret } = await admin.createKey({ accountId: account!.id, kind: KeyKind.SECRET, livemode: false, expiresAt: BigInt(expiresAt) });
  expect((await admin.verifyKey({ secret })).key).toBeDefined();
  while (Date.now() / 1000 < expiresAt) await new Promise((r) => setTimeout(r, 100));
  await expect(admin.verifyKey({ secret })).rejects.toMatchObject({ code: "api_key_expired" });
});
