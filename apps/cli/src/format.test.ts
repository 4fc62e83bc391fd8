import { create } from "@bufbuild/protobuf";
import { ApiKeySchema, KeyKind } from "@rms/proto";
import { describe, expect, it } from "vitest";
import { keyJson, keyLine } from "./format.js";

const NOW = 1_900_000_000;

describe("rms keys list", () => {
  it("says what a dashboard session is and when it ends: active until its expiry, then expired", () => {
    const session = create(ApiKeySchema, {
      id: "key_1",
      kind: KeyKind.RESTRICTED,
      livemode: false,
      prefix: "rk_test_abcd",
      scopes: ["resources:read"],
      dashboardSession: true,
      expiresAt: BigInt(NOW + 3600),
    });
    expect(keyLine(session, NOW)).toBe("key_1  rk_test_abcd…  dashboard-session  test  active, expires 2030-03-17T18:46:40Z  resources:read");
    expect(keyLine(session, NOW + 7200)).toContain("expired 2030-03-17T18:46:40Z");
    expect(keyJson(session)).toMatchObject({ dashboard_session: true, expires_at: NOW + 3600, last_used_at: null });
  });

  it("a key without expiry, and a revoked one", () => {
    const key = create(ApiKeySchema, { id: "key_2", kind: KeyKind.SECRET, livemode: true, prefix: "sk_live_abcd", lastUsedAt: BigInt(NOW) });
    expect(keyLine(key, NOW)).toBe("key_2  sk_live_abcd…  secret  live  active, no expiry  ");
    expect(keyLine({ ...key, revokedAt: BigInt(NOW) }, NOW)).toContain("revoked 2030-03-17T17:46:40Z");
    expect(keyJson(key).last_used_at).toBe(NOW);
  });
});
