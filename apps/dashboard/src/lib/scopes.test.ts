import { describe, expect, it } from "vitest";
import { keyFromFragment } from "../session";
import { grants, missingScopeReason, probeScopes, SCOPE_PROBES } from "./scopes";

describe("what the key may do", () => {
  it("reads each probe's answer: a refusal or a missing route means no", () => {
    expect(grants(200, undefined)).toBe(true);
    expect(grants(400, "parameter_unknown")).toBe(true);
    expect(grants(403, "insufficient_scope")).toBe(false);
    expect(grants(403, "publishable_key_read_only")).toBe(false);
    expect(grants(404, "route_missing")).toBe(false);
  });

  it("probes every scope with requests that change nothing", async () => {
    const seen: { path: string; method: string; body: unknown }[] = [];
    const fetcher = (async (url: string, init: RequestInit) => {
      const path = new URL(url).pathname;
      seen.push({ path, method: init.method ?? "GET", body: init.body });
      const status =
        path.startsWith("/v1/files") || path.startsWith("/v1/uploads") || path.startsWith("/v1/request_logs")
          ? 404
          : path.startsWith("/v1/webhook")
            ? 403
            : init.method === "POST"
              ? 400
              : 200;
      const code = status === 404 ? "route_missing" : status === 403 ? "insufficient_scope" : status === 400 ? "parameter_unknown" : undefined;
      return new Response(JSON.stringify(code ? { error: { code } } : { data: [] }), { status });
    }) as typeof fetch;
    expect(await probeScopes("rk_test_x", fetcher)).toEqual(["resources:read", "resources:write", "jobs:read", "jobs:write", "events:read"]);
    expect(seen).toHaveLength(Object.keys(SCOPE_PROBES).length);
    // Every write probe is a dry run or carries an unknown parameter, refused (400) before anything runs.
    for (const probe of seen.filter((s) => s.method === "POST")) {
      const body = JSON.parse(String(probe.body)) as Record<string, unknown>;
      expect(body.validate_only === true || (body.scope_probe === true && Object.keys(body).length === 1)).toBe(true);
    }
  });

  it("rejects with the API's answer when the key itself is refused", async () => {
    const fetcher = (async () =>
      new Response(JSON.stringify({ error: { code: "api_key_expired", message: "This API key has expired.", request_id: "req_1" } }), {
        status: 401,
      })) as unknown as typeof fetch;
    await expect(probeScopes("rk_test_x", fetcher)).rejects.toThrow("This API key has expired.");
  });

  it("says which scope a disabled control needs", () => {
    expect(missingScopeReason(["resources:read"], "resources:write")).toBe(
      "This key does not have the resources:write scope (a read-only session changes nothing).",
    );
    expect(missingScopeReason(["resources:read"], "resources:read")).toBeNull();
  });

  it("takes a key from a sign-in link's fragment only when it looks like one", () => {
    // Made here so that no text shaped like a key is kept in the repository.
    const key = ["rk", "test", "x".repeat(32)].join("_");
    expect(keyFromFragment(`#key=${key}`)).toBe(key);
    expect(keyFromFragment("#key=<script>")).toBeNull();
    expect(keyFromFragment("")).toBeNull();
  });
});
