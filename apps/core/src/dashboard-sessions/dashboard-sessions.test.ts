import { DashboardSessionService, REPLAY_METADATA, type ServiceClient } from "@rms/proto";
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
  const answer = await sessions.createDashboardSession({ tenant, ...fields }, { metadata: { "idempotency-key": key, "rms-request-id": `req_${key}` }, onTrailers });
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
      await expect(client.createDashboardSession({ tenant: account.test }, { metadata: { "idempotency-key": "dash-nokey" } })).rejects.toMatchObject({ code: "internal_error" });
      expect((await bare.admin.listKeys({ accountId: account.id })).keys.filter((k) => k.kind === bare.KeyKind.RESTRICTED)).toHaveLength(0);
      // Without a key it works as before.
      expect((await client.createDashboardSession({ tenant: account.test })).secret).toMatch(/^rk_test_/);
    } finally {
      await bare.stop();
    }
  });
});
