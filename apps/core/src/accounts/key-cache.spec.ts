import { describe, expect, it } from "vitest";
import { KeyCache } from "./key-cache.js";
import type { KeyDocument } from "./store.js";

const key = (revoked: number | null = null) => ({ _id: "key_1", hash: "h", revoked_at: revoked }) as unknown as KeyDocument;

describe("KeyCache", () => {
  it("keeps a verified key for its lifetime only", () => {
    const cache = new KeyCache(1_000);
    cache.set("h", key(), cache.begin(), 0);
    expect(cache.get("h", 999)).toBeDefined();
    expect(cache.get("h", 1_000)).toBeUndefined();
  });

  it("never keeps a revoked key, and forgets one when it is revoked", () => {
    const cache = new KeyCache(1_000);
    cache.set("h", key(5), cache.begin(), 0);
    expect(cache.get("h", 1)).toBeUndefined();
    cache.set("h", key(), cache.begin(), 0);
    cache.revoked("h");
    expect(cache.get("h", 1)).toBeUndefined();
  });

  it("does not keep what a lookup read before a revocation finished", () => {
    const cache = new KeyCache(1_000);
    const generation = cache.begin(); // a lookup starts, reads the key unrevoked...
    cache.revoked("h"); // ...the revocation is written meanwhile...
    cache.set("h", key(), generation, 0); // ...and the stale result must not be kept
    expect(cache.get("h", 1)).toBeUndefined();
  });

  it("is off with a zero lifetime", () => {
    const cache = new KeyCache(0);
    cache.set("h", key(), cache.begin(), 0);
    expect(cache.get("h", 0)).toBeUndefined();
  });
});
