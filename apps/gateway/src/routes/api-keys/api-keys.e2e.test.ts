import { expect, it } from "vitest";
import { useStackWithSecretKey } from "../../testutil/harness.js";

const ctx = useStackWithSecretKey({ coreSettings: { secretKeyring: { primary: { id: "keyspage", bytes: Buffer.alloc(32, 6) } } } });

/** A dashboard session's key (read-only or not) made with the account's secret key. */
async function sessionKey(readOnly: boolean): Promise<{ key: string; id: string }> {
  const made = await ctx.stack.api.post("/v1/dashboard_sessions", { key: ctx.key, json: { read_only: readOnly, expires_in: 600 } });
  expect(made.status).toBe(201);
  return { key: /#key=(rk_test_\w+)$/.exec(made.json.url as string)![1]!, id: made.json.api_key as string };
}

it("lists the account's keys of this mode for a secret key and for a dashboard session's key, never key material; others are refused", async () => {
  const restricted = await ctx.account.key("restricted", "test", { scopes: ["resources:read"] });
  const live = await ctx.account.key("secret", "live");
  const session = await sessionKey(true);
  const listed = await ctx.stack.api.get("/v1/api_keys", { key: ctx.key });
  expect(listed.status).toBe(200);
  expect(listed.json).toMatchObject({ object: "list", url: "/v1/api_keys", has_more: false });
  const ids = (listed.json.data as { id: string }[]).map((k) => k.id);
  expect(ids).toContain(session.id);
  expect(ids).toContain(restricted.id);
  expect(ids).not.toContain(live.id);
  const shown = (listed.json.data as Record<string, unknown>[]).find((k) => k["id"] === session.id)!;
  expect(Object.keys(shown)).toEqual([
    "id",
    "object",
    "kind",
    "dashboard_session",
    "scopes",
    "livemode",
    "status",
    "created",
    "expires_at",
    "revoked_at",
    "last_used_at",
  ]);
  expect(shown).toMatchObject({ object: "api_key", kind: "restricted", dashboard_session: true, status: "active", livemode: false });
  expect(shown["expires_at"]).toBeGreaterThan(Date.now() / 1000);
  // No secret, no hash, no part of one, anywhere in the answer.
  expect(listed.text).not.toMatch(/sk_test_|rk_test_|pk_test_|"hash"|"prefix"|"secret":/);
  // The secret key that asked has been used: its last use is noted (to within 5 minutes).
  const own = (listed.json.data as Record<string, unknown>[]).find((k) => k["kind"] === "secret")!;
  expect(own["last_used_at"]).toBeGreaterThan(Date.now() / 1000 - 600);

  // A read-only session lists them (the dashboard's keys page); another restricted key and a publishable one do not.
  expect((await ctx.stack.api.get("/v1/api_keys", { key: session.key })).status).toBe(200);
  const other = await ctx.stack.api.get("/v1/api_keys", { key: restricted.secret });
  expect(other.status).toBe(403);
  expect(other.json.error).toMatchObject({ code: "insufficient_scope" });
  const publishable = await ctx.account.key("publishable", "test");
  expect((await ctx.stack.api.get("/v1/api_keys", { key: publishable.secret })).status).toBe(403);
});

it("a secret key revokes a key of the account at once (its next request is 401); a session cannot; another account's key is not found", async () => {
  const victim = await ctx.account.key("restricted", "test", { scopes: ["resources:read"] });
  expect((await ctx.stack.api.get("/v1/resources", { key: victim.secret })).status).toBe(200);
  const full = await sessionKey(false);
  const refused = await ctx.stack.api.post(`/v1/api_keys/${victim.id}/revoke`, { key: full.key });
  expect(refused.status).toBe(403);
  expect(refused.json.error).toMatchObject({ code: "insufficient_scope" });
  const revoked = await ctx.stack.api.post(`/v1/api_keys/${victim.id}/revoke`, { key: ctx.key });
  expect(revoked.status).toBe(200);
  expect(revoked.json).toMatchObject({ id: victim.id, object: "api_key", status: "revoked" });
  expect(revoked.json.revoked_at).toBeGreaterThan(0);
  const after = await ctx.stack.api.get("/v1/resources", { key: victim.secret });
  expect(after.status).toBe(401);
  expect(after.json.error).toMatchObject({ code: "api_key_revoked" });
  // Another account's key, and one of the other mode: not found.
  const stranger = await ctx.stack.newAccount();
  const theirs = await stranger.key("secret", "test");
  expect((await ctx.stack.api.post(`/v1/api_keys/${theirs.id}/revoke`, { key: ctx.key })).status).toBe(404);
  const live = await ctx.account.key("secret", "live");
  expect((await ctx.stack.api.post(`/v1/api_keys/${live.id}/revoke`, { key: ctx.key })).status).toBe(404);
  expect((await ctx.stack.api.get("/v1/resources", { key: theirs.secret })).status).toBe(200);
});
