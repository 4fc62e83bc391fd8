import { describe, expect, it } from "vitest";
import { IDEMPOTENCY_RETENTION_MS, idempotencyScopeId } from "./idempotency.js";

describe("Idempotency-Key scope and retention", () => {
  it("names a key per account and mode, the key kept verbatim", () => {
    expect(idempotencyScopeId("acct_1", false, "a/b:c")).toBe("acct_1/test/a/b:c");
    expect(idempotencyScopeId("acct_1", true, "k")).toBe("acct_1/live/k");
    expect(idempotencyScopeId("acct_1", true, "k")).not.toBe(idempotencyScopeId("acct_1", false, "k"));
  });

  it("binds a key for 24 hours", () => {
    expect(IDEMPOTENCY_RETENTION_MS).toBe(86_400_000);
  });
});
