import { errors, isUnansweredWrite } from "../errors.js";
import type { Budget } from "../budget.js";

/**
 * Runs one write command within the call's budget: refused before sending when no time
 * is left (nothing done), and reported as outcome unknown when it was sent but its
 * answer never came (it may still commit).
 */
export async function writeWithin<T>(budget: Budget, write: (options: { timeoutMS?: number }) => Promise<T>): Promise<T> {
  budget.beforeWrite();
  const options = budget.db();
  try {
    return await write(options);
  } catch (error) {
    if (isUnansweredWrite(error)) throw errors.outcomeUnknown();
    throw error;
  }
}
