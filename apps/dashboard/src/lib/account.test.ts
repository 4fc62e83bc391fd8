import { describe, expect, it } from "vitest";
import { fragmentAction } from "../session";
import { accountOf, describeAccount, endSession, fetchAccount } from "./account";

// Keys of the right shape, made here so that no text shaped like a key is kept in the repository.
const keyOf = (mode: "test" | "live", fill: string) => ["rk", mode, fill.repeat(32)].join("_");
const A = keyOf("test", "a");
const B = keyOf("live", "b");

describe("a sign-in link in a tab", () => {
  it("signs in a tab without a key, asks in a tab signed in with another key, and does nothing for the same key", () => {
    expect(fragmentAction(null, A)).toBe("sign_in");
    expect(fragmentAction(A, B)).toBe("ask");
    expect(fragmentAction(A, A)).toBe("none");
    expect(fragmentAction(A, null)).toBe("none");
  });
});

describe("the key's account", () => {
  const answer = { id: "acct_1", object: "account", livemode: true, api_key: "key_9", key_kind: "restricted", dashboard_session: true };

  it("is read from GET /v1/account, and said with its mode", async () => {
    const seen: string[] = [];
    const fetcher = (async (path: string, init: RequestInit) => {
      seen.push(`${path} ${(init.headers as Record<string, string>)["Authorization"]}`);
      return new Response(JSON.stringify(answer), { status: 200 });
    }) as unknown as typeof fetch;
    const account = await fetchAccount(B, fetcher);
    expect(account).toEqual({ id: "acct_1", livemode: true, apiKey: "key_9", keyKind: "restricted", dashboardSession: true });
    expect(seen).toEqual([`/v1/account Bearer ${B}`]);
    expect(describeAccount(account!)).toBe("acct_1 (live mode)");
    expect(accountOf({ object: "resource", id: "res_1" })).toBeNull();
  });

  it("is unknown on a server without the route, and a refused key rejects with the API's message", async () => {
    const missing = (async () => new Response(JSON.stringify({ error: { code: "route_missing", message: "no" } }), { status: 404 })) as unknown as typeof fetch;
    expect(await fetchAccount(A, missing)).toBeNull();
    const revoked = (async () =>
      new Response(JSON.stringify({ error: { code: "api_key_revoked", message: "This API key has been revoked." } }), {
        status: 401,
      })) as unknown as typeof fetch;
    await expect(fetchAccount(A, revoked)).rejects.toThrow("This API key has been revoked.");
  });

  it("a session is ended with its own key, and a failure to reach the API is no error", async () => {
    const calls: string[] = [];
    const fetcher = (async (path: string, init: RequestInit) => {
      calls.push(`${init.method} ${path} ${(init.headers as Record<string, string>)["Authorization"]}`);
      return new Response("{}", { status: 200 });
    }) as unknown as typeof fetch;
    expect(await endSession(A, "key_9", fetcher)).toBe(true);
    expect(calls).toEqual([`POST /v1/dashboard_sessions/key_9/revoke Bearer ${A}`]);
    const offline = (async () => {
      throw new TypeError("offline");
    }) as unknown as typeof fetch;
    expect(await endSession(A, "key_9", offline)).toBe(false);
  });
});
