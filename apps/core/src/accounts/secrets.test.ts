import { describe, expect, it } from "vitest";
import { grantedScopes, hashSecret, newSecret, parseSecret, SCOPES } from "./secrets.js";

describe("secrets", () => {
  it("have the kind and mode prefixes and at least 128 bits of randomness", () => {
    const secret = newSecret("restricted", true);
    expect(secret).toMatch(/^rk_live_[0-9A-Za-z]{32}$/);
    expect(32 * Math.log2(62)).toBeGreaterThan(128);
    expect(parseSecret(secret)).toEqual({ kind: "restricted", livemode: true });
    expect(parseSecret(newSecret("publishable", false))).toEqual({ kind: "publishable", livemode: false });
    expect(parseSecret("sk_test_short")).toBeNull();
    expect(parseSecret(`xk_test_${"a".repeat(32)}`)).toBeNull();
  });

  it("are stored only as their hashes, one per secret", () => {
    const secret = newSecret("secret", false);
    expect(hashSecret(secret)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashSecret(secret)).not.toContain(secret.slice(8));
    expect(hashSecret(secret)).toBe(hashSecret(secret));
    expect(hashSecret(`${secret}x`)).not.toBe(hashSecret(secret));
  });
});

describe("scopes", () => {
  it("follow the key kind", () => {
    expect(grantedScopes("secret", [])).toEqual([...SCOPES]);
    expect(grantedScopes("publishable", ["resources:write"])).toEqual(["resources:read"]);
    expect(grantedScopes("restricted", ["resources:read"])).toEqual(["resources:read"]);
  });

  it("expand jobs:write to include jobs:read", () => {
    expect(grantedScopes("restricted", ["jobs:write"])).toEqual(["jobs:read", "jobs:write"]);
  });
});
