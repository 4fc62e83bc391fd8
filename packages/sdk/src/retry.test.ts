import { describe, expect, it } from "vitest";
import { MAX_DELAY_MS, retryableAnswer, retryableFailure, retryAfterMs, retryDelayMs } from "./retry.js";

const headers = (entries: Record<string, string> = {}) => new Headers(entries);

describe("which answers are tried again", () => {
  it("network errors, 429, 409 idempotency_key_in_use and 5xx; not when the answer says Stripe-Should-Retry: false", () => {
    expect(retryableAnswer(429, "rate_limited", headers())).toBe(true);
    expect(retryableAnswer(503, "service_unavailable", headers())).toBe(true);
    expect(retryableAnswer(500, "internal_error", headers())).toBe(true);
    expect(retryableAnswer(409, "idempotency_key_in_use", headers())).toBe(true);
    expect(retryableAnswer(409, "state_conflict", headers())).toBe(false);
    expect(retryableAnswer(400, "parameter_invalid", headers())).toBe(false);
    expect(retryableAnswer(404, "resource_missing", headers())).toBe(false);
    expect(retryableAnswer(503, "service_unavailable", headers({ "Stripe-Should-Retry": "false" }))).toBe(false);
    expect(retryableAnswer(400, "x", headers({ "Stripe-Should-Retry": "true" }))).toBe(true);
    expect(retryableFailure(Object.assign(new Error("reset"), { code: "ECONNRESET" }))).toBe(true);
    expect(retryableFailure(Object.assign(new Error("self-signed"), { code: "DEPTH_ZERO_SELF_SIGNED_CERT" }))).toBe(false);
  });
});

describe("how long a retry waits", () => {
  it("backs off exponentially with jitter, capped, and never sooner than Retry-After", () => {
    expect(retryDelayMs(1, undefined, () => 0)).toBe(250);
    expect(retryDelayMs(1, undefined, () => 1)).toBe(500);
    expect(retryDelayMs(3, undefined, () => 1)).toBe(2000);
    expect(retryDelayMs(20, undefined, () => 1)).toBe(MAX_DELAY_MS);
    expect(retryDelayMs(1, 2000, () => 1)).toBe(2000);
    expect(retryDelayMs(5, 1000, () => 1)).toBe(8000);
    // A Retry-After of more than a minute is answered as the error, not waited for.
    expect(retryDelayMs(1, 120_000)).toBeUndefined();
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    expect(retryAfterMs(headers({ "Retry-After": "3" }))).toBe(3000);
    expect(retryAfterMs(headers({ "Retry-After": new Date(10_000).toUTCString() }), 4_000)).toBe(6000);
    expect(retryAfterMs(headers())).toBeUndefined();
  });
});
