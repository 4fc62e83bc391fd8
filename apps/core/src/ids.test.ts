import { describe, expect, it } from "vitest";
import { idTimeMs, isId, newId } from "./ids.js";

describe("newId", () => {
  it("makes prefixed base62 ids of fixed length", () => {
    const id = newId("res");
    expect(id).toMatch(/^res_[0-9A-Za-z]{22}$/);
    expect(isId("res", id)).toBe(true);
    expect(isId("acct", id)).toBe(false);
  });

  it("sorts byte-wise by creation time, even across a change in digit count", () => {
    const times = [0, 61, 62, 1_700_000_000_000, 1_700_000_000_001, 4_102_444_800_000];
    const ids = times.map((t) => newId("res", t));
    expect([...ids].sort()).toEqual(ids);
    expect(ids.map(idTimeMs)).toEqual(times);
  });

  it("does not repeat within the same millisecond", () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newId("evt", 1_700_000_000_000)));
    expect(ids.size).toBe(10_000);
  });

  it("rejects malformed ids", () => {
    for (const bad of ["", "res_", "res_short", `res_${"a".repeat(23)}`, `res_${"-".repeat(22)}`, `RES_${"a".repeat(22)}`]) {
      expect(isId("res", bad), bad).toBe(false);
    }
  });
});
