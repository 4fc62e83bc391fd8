import { status as GrpcStatus } from "@grpc/grpc-js";
import { AdminService, KeyKind, createClient, keyHash } from "@rms/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestCore, type TestCore } from "../testutil/harness.js";

let t: TestCore;
let account: string;
beforeAll(async () => {
  t = await startTestCore();
  account = (await t.newAccount()).id;
});
afterAll(() => t.stop());

describe("accounts and keys", () => {
  it("creates each kind of key in each mode with the matching prefix and scopes", async () => {
    const cases = [
      [KeyKind.SECRET, false, [], /^sk_test_/],
      [KeyKind.SECRET, true, [], /^sk_live_/],
      [KeyKind.PUBLISHABLE, false, [], /^pk_test_/],
      [KeyKind.PUBLISHABLE, true, [], /^pk_live_/],
      [KeyKind.RESTRICTED, false, ["resources:read"], /^rk_test_/],
      [KeyKind.RESTRICTED, true, ["jobs:write"], /^rk_live_/],
    ] as const;
    for (const [kind, livemode, scopes, prefix] of cases) {
      const { key, secret } = await t.admin.createKey({ accountId: account, kind, livemode, scopes: [...scopes] });
      expect(secret).toMatch(prefix);
      expect(key?.id).toMatch(/^key_/);
      const verified = await t.admin.verifyKey({ secret });
      expect(verified.key).toMatchObject({ id: key!.id, accountId: account, kind, livemode });
    }
    const { key: restricted } = await t.admin.createKey({ accountId: account, kind: KeyKind.RESTRICTED, scopes: ["jobs:write"] });
    expect(restricted?.scopes).toEqual(["jobs:read", "jobs:write"]);
    const { key: publishable } = await t.admin.createKey({ accountId: account, kind: KeyKind.PUBLISHABLE });
    expect(publishable?.scopes).toEqual(["resources:read"]);
  });

  it("stores only a hash of the secret", async () => {
    const { key, secret } = await t.admin.createKey({ accountId: account, kind: KeyKind.SECRET });
    const stored = await t.db.collection("api_keys").findOne({ _id: key!.id as never });
    expect(JSON.stringify(stored)).not.toContain(secret);
    expect(JSON.stringify(stored)).not.toContain(secret.slice(12));
  });

  it("lists an account's keys without secrets, newest first", async () => {
    const { id } = await t.newAccount();
    const a = await t.admin.createKey({ accountId: id, kind: KeyKind.SECRET });
    const b = await t.admin.createKey({ accountId: id, kind: KeyKind.PUBLISHABLE, livemode: true });
    const { keys } = await t.admin.listKeys({ accountId: id });
    expect(keys.map((k) => k.id)).toEqual([b.key!.id, a.key!.id]);
    expect(JSON.stringify(keys, (_k, v) => (typeof v === "bigint" ? Number(v) : v))).not.toContain(a.secret);
  });

  it("refuses unknown secrets, revoked keys and expired keys with distinct codes", async () => {
    await expect(t.admin.verifyKey({ secret: `sk_test_${"A".repeat(32)}` })).rejects.toMatchObject({
      grpcCode: GrpcStatus.UNAUTHENTICATED,
      code: "api_key_invalid",
    });
    await expect(t.admin.verifyKey({ secret: "garbage" })).rejects.toMatchObject({ code: "api_key_invalid" });

    const revoked = await t.admin.createKey({ accountId: account, kind: KeyKind.SECRET });
    const { key } = await t.admin.revokeKey({ keyId: revoked.key!.id, reason: "test" });
    expect(Number(key?.revokedAt)).toBeGreaterThan(0);
    await expect(t.admin.verifyKey({ secret: revoked.secret })).rejects.toMatchObject({ code: "api_key_revoked" });

    const expired = await t.admin.createKey({ accountId: account, kind: KeyKind.SECRET, expiresAt: BigInt(Math.floor(Date.now() / 1000) - 1) });
    await expect(t.admin.verifyKey({ secret: expired.secret })).rejects.toMatchObject({ code: "api_key_expired" });
    const later = await t.admin.createKey({ accountId: account, kind: KeyKind.SECRET, expiresAt: BigInt(Math.floor(Date.now() / 1000) + 3600) });
    await expect(t.admin.verifyKey({ secret: later.secret })).resolves.toBeTruthy();
  });

  it("answers a revoked or expired key as it is when asked to (answer_refused), and still refuses an unknown one", async () => {
    const revoked = await t.admin.createKey({ accountId: account, kind: KeyKind.SECRET });
    await t.admin.revokeKey({ keyId: revoked.key!.id, reason: "test" });
    const answered = (await t.admin.verifyKey({ secret: revoked.secret, answerRefused: true })).key;
    expect(answered?.id).toBe(revoked.key!.id);
    expect(answered?.accountId).toBe(account);
    expect(Number(answered?.revokedAt)).toBeGreaterThan(0);
    const expired = await t.admin.createKey({ accountId: account, kind: KeyKind.SECRET, expiresAt: BigInt(Math.floor(Date.now() / 1000) - 1) });
    expect((await t.admin.verifyKey({ secret: expired.secret, answerRefused: true })).key?.expiresAt).toBe(expired.key!.expiresAt);
    await expect(t.admin.verifyKey({ secret: `sk_test_${"B".repeat(32)}`, answerRefused: true })).rejects.toMatchObject({ code: "api_key_invalid" });
  });

  it("verifies by the key's hash alone, with the same refusals", async () => {
    const created = await t.admin.createKey({ accountId: account, kind: KeyKind.RESTRICTED, scopes: ["resources:read"] });
    const { key } = await t.admin.verifyKey({ secretHash: keyHash(created.secret) });
    expect(key?.id).toBe(created.key!.id);
    await expect(t.admin.verifyKey({ secretHash: keyHash(`sk_test_${"B".repeat(32)}`) })).rejects.toMatchObject({ code: "api_key_invalid" });
    await expect(t.admin.verifyKey({ secretHash: "not-a-hash" })).rejects.toMatchObject({ code: "api_key_invalid" });
    await expect(t.admin.verifyKey({})).rejects.toMatchObject({ code: "api_key_invalid" });
    await t.admin.revokeKey({ keyId: created.key!.id, reason: "test" });
    await expect(t.admin.verifyKey({ secretHash: keyHash(created.secret) })).rejects.toMatchObject({ code: "api_key_revoked" });
  });

  it.each([
    ["an unknown account", { accountId: "acct_0VbmcTa0dnRox8QNLmcF1D", kind: KeyKind.SECRET }, "resource_missing"],
    ["no kind", { kind: KeyKind.UNSPECIFIED }, "parameter_invalid"],
    ["a restricted key without scopes", { kind: KeyKind.RESTRICTED }, "parameter_missing"],
    ["an unknown scope", { kind: KeyKind.RESTRICTED, scopes: ["everything"] }, "parameter_invalid"],
    ["scopes on a secret key", { kind: KeyKind.SECRET, scopes: ["resources:read"] }, "parameter_invalid"],
  ])("refuses to create a key for %s", async (_label, request, code) => {
    await expect(t.admin.createKey({ accountId: account, ...request })).rejects.toMatchObject({ code });
  });

  it("is 404 when revoking an unknown key", async () => {
    await expect(t.admin.revokeKey({ keyId: "key_0VbmcTa0dnRox8QNLmcF1D" })).rejects.toMatchObject({ grpcCode: GrpcStatus.NOT_FOUND });
  });
});

describe("admin token", () => {
  it("is required on every call", async () => {
    for (const metadata of [
      {} as Record<string, string>,
      { authorization: "Bearer wrong-token-0123456789" },
      { authorization: "test-admin-token-0123456789" },
    ]) {
      const client = createClient(AdminService, t.core.address, { metadata });
      await expect(client.createAccount({})).rejects.toMatchObject({ grpcCode: GrpcStatus.UNAUTHENTICATED, code: "admin_token_invalid" });
      client.close();
    }
  });
});

describe("ListAccounts", () => {
  it("lists accounts newest first, bounded by limit", async () => {
    const a = await t.newAccount();
    const b = await t.newAccount();
    const { accounts } = await t.admin.listAccounts({ limit: 2 });
    expect(accounts.map((x) => x.id)).toEqual([b.id, a.id]);
    await expect(t.admin.listAccounts({ limit: 101 })).rejects.toMatchObject({ code: "limit_invalid" });
  });
});
