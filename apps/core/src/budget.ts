import type { CallContext } from "@rms/proto";
import type { ClientSession } from "mongodb";
import { errors } from "./errors.js";

/**
 * Core's budget for a call ends this long before the caller's deadline, so that
 * core's own answer (done, not done, or outcome unknown) reaches the caller
 * before the caller gives up and has to guess.
 */
export const DEADLINE_MARGIN_MS = 500;

/** How much time a call has left, for its database commands and before its writes. */
export interface Budget {
  /**
   * Options for one database command: the time left (the driver's `timeoutMS`), and the session of the transaction
   * the call's writes commit in, when they do (`inTransaction`). Throws when no time is left.
   */
  db(): { timeoutMS?: number; session?: ClientSession };
  /** Refuses to start a write when nobody waits for it any more: nothing has been done (UNAVAILABLE). */
  beforeWrite(): void;
  /** Runs `effect` once the writes made so far are durable: at once, or after the commit of the call's transaction. */
  afterCommit?(effect: () => void): void;
  /** In a transaction: runs `undo` if it aborts (see `afterAbort`). */
  afterAbort?(undo: () => Promise<void>): void;
}

/** Runs `effect` once the writes `budget` made are committed (budget.afterCommit), or at once. */
export function afterCommit(budget: Budget, effect: () => void): void {
  if (budget.afterCommit) budget.afterCommit(effect);
  else effect();
}

/**
 * Runs `undo` if the writes `budget` made are known never to commit (the call's transaction aborted): what a write
 * made outside its transaction for it (a file's hold by a job that will not exist) is given back. Outside a
 * transaction, never: the write stands.
 */
export function afterAbort(budget: Budget, undo: () => Promise<void>): void {
  budget.afterAbort?.(undo);
}

/** Whether `budget`'s commands run in a transaction (a write conflict there aborts it: its caller runs it again). */
export function inATransaction(budget: Budget): boolean {
  return budget.afterAbort !== undefined;
}

/** A transaction's view of a call's budget: every command it runs joins `session`; effects wait for the commit. */
export interface TransactionBudget extends Budget {
  afterAbort(undo: () => Promise<void>): void;
  /** Runs the effects the writes asked for (after the commit). */
  committed(): void;
  /** Runs what was to be given back if nothing committed (after an abort; never after a commit of unknown outcome). */
  aborted(): Promise<void>;
}

export function inTransaction(budget: Budget, session: ClientSession): TransactionBudget {
  const effects: (() => void)[] = [];
  const undos: (() => Promise<void>)[] = [];
  return {
    db: () => ({ ...budget.db(), session }),
    beforeWrite: () => budget.beforeWrite(),
    afterCommit: (effect) => void effects.push(effect),
    afterAbort: (undo) => void undos.push(undo),
    committed: () => {
      undos.length = 0;
      for (const effect of effects.splice(0)) effect();
    },
    aborted: async () => {
      effects.length = 0;
      for (const undo of undos.splice(0)) await undo().catch(() => undefined);
    },
  };
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
