export type EventuallyOptions = {
  /** How long to keep trying before giving up with the last failure. */
  timeoutMs?: number;
  /** Pause between attempts. */
  intervalMs?: number;
};

/**
 * Retries `attempt` until it returns without throwing (e.g. its `expect`s pass)
 * and returns what it returned; after `timeoutMs` rethrows its last failure.
 * The one way tests wait for something asynchronous: no fixed sleeps, no unbounded loops.
 */
export async function eventually<T>(attempt: () => T | Promise<T>, { timeoutMs = 10_000, intervalMs = 50 }: EventuallyOptions = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}
