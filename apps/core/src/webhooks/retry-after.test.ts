import { describe, expect, it } from "vitest";
import { parseRetryAfter } from "./retry-after.js";

const now = Date.UTC(2026, 0, 1, 12, 0, 0);

describe("parseRetryAfter", () => {
  it.each([
    [undefined, null],
    ["", null],
    ["120", 120],
    [" 7 ", 7],
    ["0", 0],
    ["-5", null],
    ["1.5", null],
    ["soon", null],
    ["Thu, 01 Jan 2026 12:02:00 GMT", 120], // IMF-fixdate
    ["Thursday, 01-Jan-26 12:00:30 GMT", 30], // RFC 850
    ["Thu Jan  1 12:01:00 2026", 60], // asctime
    ["Thu, 01 Jan 2026 11:00:00 GMT", 0], // in the past
    ["Thu, 01 Jan 2026 12:00:00 GMT", 0],
    ["Thu, 01 Jan 2026 12:00:00.500 GMT", 1], // rounded up, never early
  ] as const)("%j -> %j", (value, seconds) => {
    expect(parseRetryAfter(value, now)).toBe(seconds);
  });
});
