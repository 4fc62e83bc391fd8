import { RpcError } from "@rms/proto";
import { MongoBulkWriteError, MongoError, MongoServerError } from "mongodb";
import { isDatabaseOutage } from "../../errors.js";

/**
 * A failure worth retrying with backoff: the database did not answer, was not reachable, or said the
 * write may be retried. Anything else is a bug or a refusal, and fails the job at once.
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof ContentionError) return true;
  // A batch that failed as a whole, with no per-document error (the connection was cut under it, a pool
  // cleared): the chunk is idempotent, so it is tried again like any other unanswered write.
  if (error instanceof MongoBulkWriteError && (Array.isArray(error.writeErrors) ? error.writeErrors.length === 0 : !error.writeErrors)) return true;
  if (error instanceof MongoServerError && TRANSIENT_SERVER_CODES.has(Number(error.code))) return true;
  if (error instanceof RpcError) return error.code === "outcome_unknown" || error.code === "service_unavailable";
  if (isDatabaseOutage(error)) return true;
  return error instanceof MongoError && (error.hasErrorLabel("RetryableWriteError") || error.hasErrorLabel("TransientTransactionError"));
}

/** A chunk whose versioned writes kept losing races with other writers: worth another try later. */
export class ContentionError extends Error {}

/**
 * Server codes that say "not now" rather than "never": time limits, interruptions, a primary stepping
 * down or not yet elected, write conflicts.
 */
const TRANSIENT_SERVER_CODES = new Set([6, 7, 50, 89, 91, 112, 189, 262, 9001, 10107, 11600, 11601, 11602, 13435, 13436]);

/** How often and how long a job is retried without progress before it fails (tests inject a small one). */
export interface RetryPolicy {
  /** Attempts in a row without a checkpoint that made progress (transient failures, or workers dying) before the job fails. */
  readonly maxStalled: number;
  /** Delay before retry `n` (1, 2, ...). */
  readonly backoffMs: (n: number) => number;
}

/** Delay before retry `n` (1, 2, ...): doubling from 500 ms, at most 30 s, with up to a fifth of jitter. */
export function backoffMs(n: number, random: () => number = Math.random): number {
  const base = Math.min(30_000, 500 * 2 ** Math.max(0, n - 1));
  return Math.round(base * (1 + random() / 5));
}

export const DEFAULT_RETRY: RetryPolicy = { maxStalled: 8, backoffMs: (n) => backoffMs(n) };
