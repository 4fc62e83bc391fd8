/**
 * When to try a failed delivery again, and when to give up on an endpoint
 * (CONTRACT.md section 7, in ../shared/docs/). Pure functions: time and randomness come in as arguments.
 */

export const DEFAULT_RETRY_SCHEDULE = "5s,5m,30m,2h,5h,10h,10h";
/** Each delay is moved by up to this fraction either way, so retries of many events spread out. */
export const JITTER_FRACTION = 0.1;
/** A `Retry-After` longer than this is honoured only up to it, so a receiver cannot park its retries for months. */
export const MAX_RETRY_AFTER_SECONDS = 86_400;
/** An endpoint whose every attempt has failed for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 5 * 86_400_000;
const MAX_STEPS = 50;
const MAX_DELAY_MS = 7 * 86_400_000;

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `WEBHOOK_RETRY_SCHEDULE` could not be read; the message names the bad item. */
export class RetryScheduleError extends Error {
  override name = "RetryScheduleError";
  readonly code = "retry_schedule_invalid";
}

/**
 * Reads a schedule such as `5s,5m,30m,2h,5h,10h,10h`: the delays before the
 * 2nd, 3rd, ... attempt (the 1st is immediate). Units ms, s, m, h, d; each
 * delay a positive whole number, at most 7 days; at most 50 of them.
 */
export function parseRetrySchedule(text: string): readonly number[] {
  const items = text.split(",").map((item) => item.trim());
  if (text.trim() === "") throw new RetryScheduleError("must list at least one delay, such as 5s,5m,30m");
  if (items.length > MAX_STEPS) throw new RetryScheduleError(`must list at most ${MAX_STEPS} delays`);
  return items.map((item, index) => {
    const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(item);
    if (!match) throw new RetryScheduleError(`delay ${index + 1} ("${item}") must be a whole number with a unit ms, s, m, h or d, such as 30s`);
    const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
    if (ms <= 0) throw new RetryScheduleError(`delay ${index + 1} ("${item}") must be greater than zero`);
    if (ms > MAX_DELAY_MS) throw new RetryScheduleError(`delay ${index + 1} ("${item}") must be at most 7d`);
    return ms;
  });
}

export interface NextAttemptInput {
  readonly schedule: readonly number[];
  /** Attempts already made for this event and endpoint, the failed one included (1 after the first). */
  readonly attemptsMade: number;
  /** When the failed attempt was made (ms since the epoch). */
  readonly failedAtMs: number;
  /** From the failed attempt's 429 or 503, if it said. */
  readonly retryAfterSeconds?: number | null;
  /** A number in [0, 1); Math.random in production. */
  readonly random: () => number;
}

/** When to make the next attempt (ms since the epoch), or null once the schedule is used up. */
export function nextAttemptAtMs(input: NextAttemptInput): number | null {
  const delay = input.schedule[input.attemptsMade - 1];
  if (delay === undefined || input.attemptsMade < 1) return null;
  const jittered = delay * (1 + JITTER_FRACTION * (2 * input.random() - 1));
  const floor = Math.min(Math.max(input.retryAfterSeconds ?? 0, 0), MAX_RETRY_AFTER_SECONDS) * 1000;
  return input.failedAtMs + Math.round(Math.max(jittered, floor));
}

/** What an endpoint keeps between attempts to apply the 5-day rule: since when every attempt has failed. */
export interface FailureStreak {
  /** Time (ms) of the first failed attempt since the last success; null while the latest attempt succeeded. */
  readonly failingSinceMs: number | null;
}

export type DisableReason = "gone" | "failing";

/**
 * The endpoint's state after one attempt: a success ends the failure streak;
 * a 410 disables at once (`gone`); a failure that ends 5 days of nothing but
 * failures disables (`failing`).
 */
export function afterAttempt(
  streak: FailureStreak,
  attempt: { readonly succeeded: boolean; readonly disableEndpoint: boolean; readonly atMs: number },
): { readonly streak: FailureStreak; readonly disable: DisableReason | null } {
  if (attempt.succeeded) return { streak: { failingSinceMs: null }, disable: null };
  const failingSinceMs = streak.failingSinceMs ?? attempt.atMs;
  const next = { failingSinceMs };
  if (attempt.disableEndpoint) return { streak: next, disable: "gone" };
  return { streak: next, disable: attempt.atMs - failingSinceMs >= DISABLE_AFTER_FAILING_MS ? "failing" : null };
}
