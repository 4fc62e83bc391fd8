import { errors, isUnansweredWrite } from "../errors.js";
import type { Budget } from "../grpc/budget.js";

/**
 * Runs one write command within the call's budget: refused before sending when no time
 * is left (nothing done), and reported as outcome unknown when it was sent but its
 * answer never came (it may still commit).
 */
export async function written<T>(budget: Budget, write: (options: { timeoutMS?: number }) => Promise<T>): Promise<T> {
  budget.beforeWrite();
  const options = budget.db();
  try {
    return await write(options);
  } catch (error) {
    if (isUnansweredWrite(error)) throw errors.outcomeUnknown();
    throw error;
  }
}

/** The server's answer to a write that broke a unique index. */
export function isDuplicateKey(error: unknown): boolean {
  return (error as { code?: number } | null)?.code === 11000;
}
