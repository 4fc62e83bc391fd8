import { isDatabaseOutage } from "../errors.js";

/** Where a retried step says it is waiting (a pino logger fits). */
interface OutageLogger {
  warn(fields: object, message: string): void;
}

export interface ThroughOutageOptions {
  readonly logger: OutageLogger;
  /** What the step is, for the log line ("core indexes"). */
  readonly what: string;
  /** How long an outage may last before the step's error is thrown (default 60 s). */
  readonly giveUpAfterMs?: number;
  /** Delay before retry `n` (1, 2, ...): doubling from 250 ms up to 5 s by default. */
  readonly delayMs?: (n: number) => number;
  readonly now?: () => number;
}

const DEFAULT_GIVE_UP_MS = 60_000;
const defaultDelay = (n: number) => Math.min(5_000, 250 * 2 ** (n - 1));

/**
 * Runs a start-up step again while the database has no primary or does not answer (an election or a restart met
 * at start), so a process started during a failover waits for the new primary instead of exiting. Any other
 * error, or an outage longer than `giveUpAfterMs`, is thrown: a wrong address still fails the start, only later.
 */
export async function throughOutage<T>(step: () => Promise<T>, options: ThroughOutageOptions): Promise<T> {
  const now = options.now ?? Date.now;
  const delay = options.delayMs ?? defaultDelay;
  const giveUpAt = now() + (options.giveUpAfterMs ?? DEFAULT_GIVE_UP_MS);
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await step();
    } catch (error) {
      if (!isDatabaseOutage(error) || now() >= giveUpAt) throw error;
      const waitMs = delay(attempt);
      options.logger.warn(
        { err: error instanceof Error ? error.message : String(error), attempt, retry_in_ms: waitMs },
        `${options.what}: database unavailable; retrying`,
      );
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}
