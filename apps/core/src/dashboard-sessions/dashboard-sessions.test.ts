import {
  ApiKeyService,
  DashboardSessionService,
  KeyKind,
  PRESENTED_KEY_ID_METADATA,
  PRESENTED_KEY_METADATA,
  REPLAY_METADATA,
  type ServiceClient,
} from "@rms/proto";
import type { Metadata } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDEMPOTENCY_RECORDS_COLLECTION } from "../storage/idempotency-records.js";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import { masterKey } from "../webhooks/index.js";

let t: TestCore;
let sessions: ServiceClient<typeof DashboardSessionService>;
beforeAll(async () => {
  t = await startTestCore({ settings: { secretKeyring: { primary: masterKey(Buffer.alloc(32, 9)) } } });
  sessions = t.client(DashboardSessionService);
});
afterAll(() => t?.stop());

/** A session made under `key`, with the `rms-replay` trailer core sent with it (undefined: executed). */
async function session(tenant: { accountId: string; livemode: boolean }, key: string, fields: { readOnly?: boolean; expiresIn?: bigint } = {}) {
  let replay: string | undefined;
  const onTrailers = (trailers: Metadata) => {
    replay = trailers.get(REPLAY_METADATA)[0] as string | undefined;
  };
  const answer = await sessions.createDashboardSession(
    { tenant, ...fields },
    { metadata: { "idempotency-key": key, "rms-request-id": `req_${key}` }, onTrailers },
  );
  return { answer, replay };
}

describe("CreateDashboardSession under an Idempotency-Key", () => {
  it("runs once: a repeat answers the same key and secret (sealed in the record), another request under the key is reused", async () => {
    const account = await t.newAccount();
    const first = await session(account.test, "dash-1", { expiresIn: 600n });
    expect(first.replay).toBeUndefined();
    expect(first.answer.secret).toMatch(/^rk_test_/);
    const again = await session(account.test, "dash-1", { expiresIn: 600n });
    expect(again.answer.key?.id).toBe(first.answer.key?.id);
    expect(again.answer.secret).toBe(first.answer.secret);
    expect(JSON.parse(again.replay!)).toMatchObject({ requestId: "req_dash-1" });
    // One key was made, not two.
    const { keys } = await t.admin.listKeys({ accountId: account.id });
    expect(keys.filter((k) => k.kind === t.KeyKind.RESTRICTED)).toHaveLength(1);
    // The record holds the answer sealed: the secret is nowhere in it in clear.
    const record = await t.db.collection(IDEMPOTENCY_RECORDS_COLLECTION).findOne({ account: account.id });
    expect(typeof record?.["answer"]?.reply).toBe("string");
    expect(JSON.stringify(record)).not.toContain(first.answer.secret);
    expect(JSON.stringify(record)).not.toContain(first.answer.secret.slice("rk_test_".length));
    // Another request under the key (read only this time): refused, nothing made.
    await expect(session(account.test, "dash-1", { expiresIn: 600n, readOnly: true })).rejects.toMatchObject({ code: "idempotency_key_reused" });
    // The key is per mode: the live mode's is another request.
    const live = await session(account.live, "dash-1", { expiresIn: 600n });
    expect(live.answer.key?.id).not.toBe(first.answer.key?.id);
    expect((await t.admin.listKeys({ accountId: account.id })).keys.filter((k) => k.kind === t.KeyKind.RESTRICTED)).toHaveLength(2);
  });

  it("a refusal is recorded and replayed like an answer; without a key every call makes a new key", async () => {
    const account = await t.newAccount();
    await expect(session(account.test, "dash-bad", { expiresIn: 86_401n })).rejects.toMatchObject({ code: "parameter_invalid", param: "expires_in" });
    let trailer: string | undefined;
    await expect(
      sessions.createDashboardSession(
        { tenant: account.test, expiresIn: 86_401n },
        { metadata: { "idempotency-key": "dash-bad" }, onTrailers: (m) => (trailer = m.get(REPLAY_METADATA)[0] as string | undefined) },
      ),
    ).rejects.toMatchObject({ code: "parameter_invalid" });
    expect(trailer).toBeDefined();
    const a = await sessions.createDashboardSession({ tenant: account.test });
    const b = await sessions.createDashboardSession({ tenant: account.test });
    expect(a.key?.id).not.toBe(b.key?.id);
  });

  it("without RMS_SECRET_KEY a keyed session is refused before any key is made (its answer could not be kept)", async () => {
    const bare = await startTestCore();
    try {
      const account = await bare.newAccount();
      const client = bare.client(DashboardSessionService);
      await expect(client.createDashboardSession({ tenant: account.test }, { metadata: { "idempotency-key": "dash-nokey" } })).rejects.toMatchObject({
        code: "internal_error",
      });
      expect((await bare.admin.listKeys({ accountId: account.id })).keys.filter((k) => k.kind === bare.KeyKind.RESTRICTED)).toHaveLength(0);
      // Without a key it works as before.
      expect((await client.createDashboardSession({ tenant: account.test })).secret).toMatch(/^rk_test_/);
    } finally {
      await bare.stop();
    }
  });
});

/** The metadata of a call the gateway makes for a client's key (the key it presented, and its id). */
const presenting = (key: { id: string; secret: string }) => ({ metadata: { [PRESENTED_KEY_METADATA]: key.secret, [PRESENTED_KEY_ID_METADATA]: key.id } });

async function secretKey(accountId: string) {
  const made = await t.admin.createKey({ accountId, kind: KeyKind.SECRET, livemode: false });
  return { id: made.key!.id, secret: made.secret };
}

async function sessionOf(tenant: { accountId: string; livemode: boolean }, creator: { id: string; secret: string }, readOnly = false) {
  const made = await sessions.createDashboardSession({ tenant, expiresIn: 600n, readOnly }, presenting(creator));
  return { id: made.key!.id, secret: made.secret, key: made.key! };
}

describe("a dashboard session made by a secret key", () => {
  it("names its creator and ends with it: refused as revoked wherever its key is checked, and listed revoked", async () => {
    const account = await t.newAccount();
    const creator = await secretKey(account.id);
    const other = await secretKey(account.id);
    const session = await sessionOf(account.test, creator);
    const bystander = await sessionOf(account.test, other);
    expect(session.key.createdBy).toBe(creator.id);
    expect((await t.resources.listResources({ tenant: account.test, limit: 1 }, presenting(session))).resources).toEqual([]);
    await t.admin.revokeKey({ keyId: creator.id, reason: "test" });
    const revoked = { code: "api_key_revoked" };
    await expect(t.resources.listResources({ tenant: account.test, limit: 1 }, presenting(session))).rejects.toMatchObject(revoked);
    await expect(t.admin.verifyKey({ secret: session.secret })).rejects.toMatchObject(revoked);
    expect(Number((await t.admin.verifyKey({ secret: session.secret, answerRefused: true })).key!.revokedAt)).toBeGreaterThan(0);
    // Another key's session goes on.
    expect((await t.resources.listResources({ tenant: account.test, limit: 1 }, presenting(bystander))).resources).toEqual([]);
    // Both lists show it as it is in effect: the operator's and the account's own.
    const byOperator = (await t.admin.listKeys({ accountId: account.id })).keys;
    expect(Number(byOperator.find((k) => k.id === session.id)!.revokedAt)).toBeGreaterThan(0);
    expect(Number(byOperator.find((k) => k.id === bystander.id)!.revokedAt)).toBe(0);
    const byAccount = (await t.client(ApiKeyService).listApiKeys({ tenant: account.test, limit: 1 })).keys;
    expect(byAccount.map((k) => [k.id, Number(k.revokedAt) > 0])).toEqual([[bystander.id, false]]);
    const older = (await t.client(ApiKeyService).listApiKeys({ tenant: account.test, startingAfter: bystander.id })).keys;
    expect(Number(older.find((k) => k.id === session.id)!.revokedAt)).toBeGreaterThan(0);
  });

  it("RevokeDashboardSession: a secret key of the tenant ends any session, a session's own key ends itself, nothing else does", async () => {
    const account = await t.newAccount();
    const stranger = await t.newAccount();
    const owner = await secretKey(account.id);
    const colleague = await secretKey(account.id);
    const first = await sessionOf(account.test, owner);
    const second = await sessionOf(account.test, owner, true);
    const restricted = await t.admin.createKey({ accountId: account.id, kind: KeyKind.RESTRICTED, livemode: false, scopes: ["resources:write"] });
    // A restricted key that is no session, and another session, may not end it.
    const insufficient = { code: "insufficient_scope" };
    await expect(
      sessions.revokeDashboardSession({ tenant: account.test, id: first.id }, presenting({ id: restricted.key!.id, secret: restricted.secret })),
    ).rejects.toMatchObject(insufficient);
    await expect(sessions.revokeDashboardSession({ tenant: account.test, id: first.id }, presenting(second))).rejects.toMatchObject(insufficient);
    // A key that is no session's, another account's session, an id of nothing: not found.
    const missing = { code: "resource_missing", param: "id" };
    await expect(sessions.revokeDashboardSession({ tenant: account.test, id: colleague.id }, presenting(owner))).rejects.toMatchObject(missing);
    const foreign = await sessionOf(stranger.test, await secretKey(stranger.id));
    await expect(sessions.revokeDashboardSession({ tenant: account.test, id: foreign.id }, presenting(owner))).rejects.toMatchObject(missing);
    await expect(sessions.revokeDashboardSession({ tenant: account.test, id: "nope" }, presenting(owner))).rejects.toMatchObject(missing);
    // The read-only session signs itself out; a colleague's secret key ends the other.
    expect(Number((await sessions.revokeDashboardSession({ tenant: account.test, id: second.id }, presenting(second))).key!.revokedAt)).toBeGreaterThan(0);
    expect(Number((await sessions.revokeDashboardSession({ tenant: account.test, id: first.id }, presenting(colleague))).key!.revokedAt)).toBeGreaterThan(0);
    for (const ended of [first, second]) {
      await expect(t.resources.listResources({ tenant: account.test, limit: 1 }, presenting(ended))).rejects.toMatchObject({ code: "api_key_revoked" });
    }
    expect((await t.resources.listResources({ tenant: account.test, limit: 1 }, presenting(owner))).resources).toEqual([]);
  });
});
