import { ApiKeyService, DashboardSessionService, KeyKind, type ServiceClient } from "@rms/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountStore, LAST_USED_GRANULARITY_S, type KeyDocument } from "./store.js";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import { masterKey } from "../webhooks/index.js";

let t: TestCore;
let keys: ServiceClient<typeof ApiKeyService>;
beforeAll(async () => {
  t = await startTestCore({ settings: { secretKeyring: { primary: masterKey(Buffer.alloc(32, 2)) } } });
  keys = t.client(ApiKeyService);
});
afterAll(() => t?.stop());

const stored = (id: string) => t.db.collection<KeyDocument>("api_keys").findOne({ _id: id });

describe("ListApiKeys and RevokeApiKey (the operator's credential here; the gateway's tests present keys)", () => {
  it("lists one mode's keys of the account, sessions included and marked, newest first by cursor; never a hash or a secret", async () => {
    const account = await t.newAccount();
    const other = await t.newAccount();
    const secret = (await t.admin.createKey({ accountId: account.id, kind: KeyKind.SECRET, livemode: false })).key!;
    const live = (await t.admin.createKey({ accountId: account.id, kind: KeyKind.SECRET, livemode: true })).key!;
    await t.admin.createKey({ accountId: other.id, kind: KeyKind.SECRET, livemode: false });
    const session = (await t.client(DashboardSessionService).createDashboardSession({ tenant: account.test, readOnly: true, expiresIn: 600n })).key!;
    const { keys: listed, hasMore } = await keys.listApiKeys({ tenant: account.test });
    expect(listed.map((k) => k.id)).toEqual([session.id, secret.id]);
    expect(hasMore).toBe(false);
    expect(listed[0]).toMatchObject({ dashboardSession: true, kind: KeyKind.RESTRICTED });
    expect(Number(listed[0]!.expiresAt)).toBeGreaterThan(0);
    expect(listed[1]).toMatchObject({ dashboardSession: false, kind: KeyKind.SECRET });
    expect(JSON.stringify(listed, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toMatch(/hash|sk_test_[0-9A-Za-z]{8}/);
    expect((await keys.listApiKeys({ tenant: account.live })).keys.map((k) => k.id)).toEqual([live.id]);
    const page = await keys.listApiKeys({ tenant: account.test, limit: 1 });
    expect(page.hasMore).toBe(true);
    expect((await keys.listApiKeys({ tenant: account.test, limit: 1, startingAfter: page.keys[0]!.id })).keys.map((k) => k.id)).toEqual([secret.id]);
  });

  it("revokes a key of the tenant at once; another account's or mode's is not found", async () => {
    const account = await t.newAccount();
    const other = await t.newAccount();
    const key = (await t.admin.createKey({ accountId: account.id, kind: KeyKind.RESTRICTED, livemode: false, scopes: ["resources:read"] })).key!;
    const foreign = (await t.admin.createKey({ accountId: other.id, kind: KeyKind.SECRET, livemode: false })).key!;
    const { key: revoked } = await keys.revokeApiKey({ tenant: account.test, id: key.id });
    expect(Number(revoked!.revokedAt)).toBeGreaterThan(0);
    expect((await stored(key.id))?.revoked_at).toBe(Number(revoked!.revokedAt));
    // Again: the first revocation's time stays.
    expect((await keys.revokeApiKey({ tenant: account.test, id: key.id })).key!.revokedAt).toBe(revoked!.revokedAt);
    await expect(keys.revokeApiKey({ tenant: account.test, id: foreign.id })).rejects.toMatchObject({ code: "resource_missing", param: "id" });
    await expect(keys.revokeApiKey({ tenant: account.live, id: key.id })).rejects.toMatchObject({ code: "resource_missing" });
    await expect(keys.revokeApiKey({ tenant: account.test, id: "nope" })).rejects.toMatchObject({ code: "resource_missing" });
    expect((await stored(foreign.id))?.revoked_at).toBeNull();
  });

  it("notes a key's use at most once per period, never a write per request", async () => {
    const store = new AccountStore(t.db);
    const account = await t.newAccount();
    const { key } = await t.admin.createKey({ accountId: account.id, kind: KeyKind.SECRET, livemode: false });
    const now = 1_900_000_000;
    const doc = (await stored(key!.id))!;
    store.noteUse(doc, now);
    await expect.poll(async () => (await stored(key!.id))?.last_used_at).toBe(now);
    // Within the period: nothing is written, whatever the document in hand says.
    store.noteUse({ _id: doc._id }, now + LAST_USED_GRANULARITY_S - 1);
    store.noteUse({ _id: doc._id, last_used_at: now }, now + 10);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await stored(key!.id))?.last_used_at).toBe(now);
    // After it: the next use is noted, and the list says so.
    store.noteUse({ _id: doc._id, last_used_at: now }, now + LAST_USED_GRANULARITY_S);
    await expect.poll(async () => (await stored(key!.id))?.last_used_at).toBe(now + LAST_USED_GRANULARITY_S);
    expect((await keys.listApiKeys({ tenant: account.test })).keys[0]!.lastUsedAt).toBe(BigInt(now + LAST_USED_GRANULARITY_S));
  });
});
