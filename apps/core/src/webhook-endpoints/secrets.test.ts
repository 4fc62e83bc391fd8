import { describe, expect, it } from "vitest";
import { rotatedSecrets, validSecrets } from "./secrets.js";

describe("rotatedSecrets", () => {
  const now = 1_000_000;
  it("caps an older expiry at the new grace, keeps an earlier one, and leaves out expired secrets", () => {
    const current = [
      { sealed: "b", expires_at: null },
      { sealed: "c", expires_at: now + 10_000 },
      { sealed: "d", expires_at: now + 999_999_000 },
      { sealed: "e", expires_at: now - 1 },
    ];
    expect(rotatedSecrets(current, { sealed: "a", expires_at: null }, now, 60)).toEqual([
      { sealed: "a", expires_at: null },
      { sealed: "b", expires_at: now + 60_000 },
      { sealed: "c", expires_at: now + 10_000 },
      { sealed: "d", expires_at: now + 60_000 },
    ]);
  });
  it("drops every older secret with a grace of 0", () => {
    expect(rotatedSecrets([{ sealed: "b", expires_at: null }], { sealed: "a", expires_at: null }, now, 0)).toEqual([{ sealed: "a", expires_at: null }]);
  });
  it("keeps each key's scheme: a rotation from v1a to v1 signs with both during the grace", () => {
    const v1a = { sealed: "k", expires_at: null, scheme: "v1a" as const, public_key: "whpk_x" };
    expect(rotatedSecrets([v1a], { sealed: "s", expires_at: null }, now, 60)).toEqual([
      { sealed: "s", expires_at: null },
      { ...v1a, expires_at: now + 60_000 },
    ]);
  });
  it("validSecrets ignores a secret from its expiry on", () => {
    expect(
      validSecrets(
        [
          { sealed: "a", expires_at: null },
          { sealed: "b", expires_at: now },
        ],
        now,
      ).map((s) => s.sealed),
    ).toEqual(["a"]);
  });
});
