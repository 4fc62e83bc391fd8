import type { CallContext } from "@rms/proto";
import { errors } from "./errors.js";

/**
 * Core's budget for a call ends this long before the caller's deadline, so that
 * core's own answer (done, not done, or outcome unknown) reaches the caller
 * before the caller gives up and has to guess.
 */
export const DEADLINE_MARGIN_MS = 500;

/** How much time a call has left, for its database commands and before its writes. */
export interface Budget {
  /** Options for one database command: the time left (the driver's `timeoutMS`). Throws when none is left. */
  db(): { timeoutMS?: number };
  /** Refuses to start a write when nobody waits for it any more: nothing has been done (UNAVAILABLE). */
  beforeWrite(): void;
}

/** No deadline: operator tools and tests that call the store directly. */
export const UNBOUNDED: Budget = { db: () => ({}), beforeWrite: () => undefined };

/** The budget of one call: the caller's deadline less the margin; a cancelled call has none left. */
export function budgetOf(context: CallContext, now: () => number = Date.now): Budget {
  const endsAt = context.deadline - DEADLINE_MARGIN_MS; // Infinity without a deadline
  // The caller's whole deadline, as far as core can tell (from the call's arrival), named when it runs out.
  const deadlineS = Math.max(1, Math.round((context.deadline - now()) / 1000));
  const left = () => {
    if (context.signal.aborted) throw errors.unavailable();
    const ms = endsAt - now();
    if (ms < 1) throw errors.deadlinePassed(deadlineS);
    return ms;
  };
  return {
    db: () => {
      const ms = left();
      return Number.isFinite(ms) ? { timeoutMS: Math.ceil(ms) } : {};
    },
    beforeWrite: () => void left(),
  };
}
