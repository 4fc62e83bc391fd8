import { RpcError } from "@rms/proto";
import { MongoError, MongoNetworkError, MongoNotConnectedError, MongoOperationTimeoutError, MongoServerSelectionError, MongoTopologyClosedError } from "mongodb";

/**
 * A failure worth retrying with backoff: the database did not answer, was not reachable, or said the
 * write may be retried. Anything else is a bug or a refusal, and fails the job at once.
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof RpcError) return error.code === "outcome_unknown" || error.code === "service_unavailable";
  if (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoOperationTimeoutError
  ) {
    return true;
  }
  return error instanceof MongoError && (error.hasErrorLabel("RetryableWriteError") || error.hasErrorLabel("TransientTransactionError"));
}

/** Delay before retry `n` (1, 2, ...): doubling from 500 ms, at most 30 s, with up to a fifth of jitter. */
export function backoffMs(n: number, random: () => number = Math.random): number {
  const base = Math.min(30_000, 500 * 2 ** Math.max(0, n - 1));
  return Math.round(base * (1 + random() / 5));
}
