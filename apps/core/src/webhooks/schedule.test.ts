import { describe, expect, it } from "vitest";
import {
  afterAttempt,
  DEFAULT_RETRY_SCHEDULE,
  DISABLE_AFTER_FAILING_MS,
  MAX_RETRY_AFTER_SECONDS,
  nextAttemptAtMs,
  parseRetrySchedule,
  RetryScheduleError,
} from "./schedule.js";

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const DAY = 24 * H;

describe("parseRetrySchedule", () => {
  it("reads the default schedule of the contract", () => {
    expect(parseRetrySchedule(DEFAULT_RETRY_SCHEDULE)).toEqual([5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 10 * H]);
  });

  it("reads compressed schedules, with spaces and every unit", () => {
    expect(parseRetrySchedule("1s,2s,3s")).toEqual([S, 2 * S, 3 * S]);
    expect(parseRetrySchedule(" 50ms , 1m,1h, 1d ")).toEqual([50, M, H, DAY]);
  });

  it.each([
    ["", "at least one"],
    ["   ", "at least one"],
    ["5", 'delay 1 ("5")'],
    ["5s,,5m", 'delay 2 ("")'],
    ["5s,5x", 'delay 2 ("5x")'],
    ["-5s", 'delay 1 ("-5s")'],
    ["1.5s", 'delay 1 ("1.5s")'],
    ["5S", 'delay 1 ("5S")'],
    ["0s", "greater than zero"],
    ["8d", "at most 7d"],
    [Array.from({ length: 51 }, () => "1s").join(","), "at most 50"],
  ])("refuses %j with a message naming the problem (%s)", (text, fragment) => {
    let caught: unknown;
    try {
      parseRetrySchedule(text);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RetryScheduleError);
    expect((caught as RetryScheduleError).code).toBe("retry_schedule_invalid");
    expect((caught as Error).message).toContain(fragment);
  });
});

describe("nextAttemptAtMs", () => {
  const schedule = parseRetrySchedule(DEFAULT_RETRY_SCHEDULE);
  const failedAtMs = 1_700_000_000_000;
  const middle = () => 0.5; // no jitter

  it("waits the n-th delay after the n-th attempt, and stops after the last", () => {
    const delays = [1, 2, 3, 4, 5, 6, 7].map((n) => nextAttemptAtMs({ schedule, attemptsMade: n, failedAtMs, random: middle })! - failedAtMs);
    expect(delays).toEqual([5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 10 * H]);
    expect(nextAttemptAtMs({ schedule, attemptsMade: 8, failedAtMs, random: middle })).toBeNull();
    expect(nextAttemptAtMs({ schedule, attemptsMade: 0, failedAtMs, random: middle })).toBeNull();
  });

  it("jitters by at most 10% either way, driven by the injected random", () => {
    expect(nextAttemptAtMs({ schedule, attemptsMade: 2, failedAtMs, random: () => 0 })! - failedAtMs).toBe(270 * S);
    expect(nextAttemptAtMs({ schedule, attemptsMade: 2, failedAtMs, random: () => 0.999_999 })! - failedAtMs).toBe(
      Math.round(5 * M * (1 + 0.1 * (2 * 0.999_999 - 1))),
    );
    expect(nextAttemptAtMs({ schedule, attemptsMade: 2, failedAtMs, random: () => 0.25 })! - failedAtMs).toBe(285 * S);
  });

  it("takes Retry-After as a floor, not a replacement", () => {
    expect(nextAttemptAtMs({ schedule, attemptsMade: 1, failedAtMs, retryAfterSeconds: 120, random: middle })! - failedAtMs).toBe(120 * S);
    expect(nextAttemptAtMs({ schedule, attemptsMade: 3, failedAtMs, retryAfterSeconds: 120, random: middle })! - failedAtMs).toBe(30 * M);
    expect(nextAttemptAtMs({ schedule, attemptsMade: 1, failedAtMs, retryAfterSeconds: 0, random: middle })! - failedAtMs).toBe(5 * S);
  });

  it("caps Retry-After at a day", () => {
    expect(nextAttemptAtMs({ schedule, attemptsMade: 1, failedAtMs, retryAfterSeconds: 365 * 86_400, random: middle })! - failedAtMs).toBe(
      MAX_RETRY_AFTER_SECONDS * S,
    );
  });

  it("does not retry past the schedule even when Retry-After asks for later", () => {
    expect(nextAttemptAtMs({ schedule: [S], attemptsMade: 2, failedAtMs, retryAfterSeconds: 60, random: middle })).toBeNull();
  });
});

describe("afterAttempt", () => {
  const t0 = 1_700_000_000_000;
  const failed = (atMs: number) => ({ succeeded: false, disableEndpoint: false, atMs });

  it("starts a failure streak at the first failure and keeps its start", () => {
    const first = afterAttempt({ failingSinceMs: null }, failed(t0));
    expect(first).toEqual({ streak: { failingSinceMs: t0 }, disable: null });
    expect(afterAttempt(first.streak, failed(t0 + DAY))).toEqual({ streak: { failingSinceMs: t0 }, disable: null });
  });

  it("disables an endpoint that has failed every attempt for 5 days, not a moment earlier", () => {
    expect(afterAttempt({ failingSinceMs: t0 }, failed(t0 + DISABLE_AFTER_FAILING_MS - 1)).disable).toBeNull();
    expect(afterAttempt({ failingSinceMs: t0 }, failed(t0 + DISABLE_AFTER_FAILING_MS)).disable).toBe("failing");
    expect(DISABLE_AFTER_FAILING_MS).toBe(5 * DAY);
  });

  it("a success ends the streak, so 5 days of mixed results do not disable", () => {
    const success = afterAttempt({ failingSinceMs: t0 }, { succeeded: true, disableEndpoint: false, atMs: t0 + 4 * DAY });
    expect(success).toEqual({ streak: { failingSinceMs: null }, disable: null });
    expect(afterAttempt(success.streak, failed(t0 + 6 * DAY)).disable).toBeNull();
  });

  it("disables at once on 410 (gone)", () => {
    expect(afterAttempt({ failingSinceMs: null }, { succeeded: false, disableEndpoint: true, atMs: t0 })).toEqual({
      streak: { failingSinceMs: t0 },
      disable: "gone",
    });
  });
});
