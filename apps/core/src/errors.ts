import { catalogueError, RpcError, type AnyErrorCode, type InvalidArgumentCode } from "@rms/proto";
import {
  MongoNetworkError,
  MongoNotConnectedError,
  MongoOperationTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  MongoWriteConcernError,
} from "mongodb";

/**
 * The errors core produces, each an RpcError whose gRPC status and public type
 * come from the shared catalogue (@rms/proto's ERROR_CATALOGUE): the gateway
 * renders them as they are. A new code is added to the catalogue, not here.
 */
export const errors = {
  /** Any catalogued code (for the few with no helper below). */
  of(code: AnyErrorCode, message?: string, param?: string): RpcError {
    return catalogueError(code, message, param);
  },
  invalid(code: InvalidCode, message: string, param?: string): RpcError {
    return catalogueError(code, message, param);
  },
  notFound(kind: string, id: string, param = "id"): RpcError {
    return catalogueError("resource_missing", `No such ${kind}: '${id}'`, param);
  },
  unauthenticated(code: "api_key_invalid" | "api_key_expired" | "api_key_revoked" | "admin_token_invalid", message: string): RpcError {
    return catalogueError(code, message);
  },
  /** A known client asking for a call its entry of the caller table does not list (clients/). */
  permissionDenied(code: "method_not_allowed", message: string): RpcError {
    return catalogueError(code, message);
  },
  conflict(code: "idempotency_key_in_use" | "state_conflict", message: string): RpcError {
    return catalogueError(code, message);
  },
  /**
   * A write was sent to the database but its answer never came (timeout, connection lost):
   * it may or may not have committed. The caller retries with the same idempotency key.
   */
  outcomeUnknown(): RpcError {
    return catalogueError("outcome_unknown");
  },
  unavailable(): RpcError {
    return catalogueError("service_unavailable");
  },
  /** The caller's deadline (about `seconds`) left core no time for the call: UNAVAILABLE, nothing written. */
  deadlinePassed(seconds: number): RpcError {
    return catalogueError(
      "service_unavailable",
      `Deadline exceeded: the call's ${seconds} s deadline left core no time to finish it (the database answers slowly, or core is overloaded); ` +
        `nothing was written.`,
    );
  },
};

/** The codes `errors.invalid` takes: every 400 `invalid_request_error` of the catalogue (a new one is added there, not here). */
export type InvalidCode = InvalidArgumentCode;

/**
 * A driver error that leaves a sent write's outcome open, as opposed to one refused before it did anything: no
 * answer came, or the primary applied the write but could not confirm that a majority has it (a write concern
 * error: the primary stepped down, shut down or timed out waiting; the write survives the election or is rolled
 * back). The driver has already sent a retryable write once more, to the new primary, when the first failure allowed it.
 */
export function isUnansweredWrite(error: unknown): boolean {
  return error instanceof MongoNetworkError || error instanceof MongoOperationTimeoutError || error instanceof MongoWriteConcernError;
}

/**
 * What a replica set answers while it has no primary, or while its primary steps down or shuts down: an
 * election (a primary killed, frozen or stepped down). The command itself did nothing (a write concern error,
 * where the write did happen, is told apart above); the driver's retry on the new primary failed too, or was not
 * possible. https://github.com/mongodb/mongo/blob/master/src/mongo/base/error_codes.yml
 */
export const ELECTION_ERROR_CODES: ReadonlySet<number> = new Set([
  91, // ShutdownInProgress
  189, // PrimarySteppedDown
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

/**
 * Database outages (told apart by the driver's error classes, never by message text) become UNAVAILABLE (the gateway
 * answers 503); other unknown errors stay unknown (500).
 */
export function mapStoreError(error: unknown): RpcError | undefined {
  if (error instanceof RpcError) return error;
  // The driver's timeoutMS is the call's budget (budget.ts): the database was reached but too slow for the deadline.
  if (error instanceof MongoOperationTimeoutError)
    return errors.of(
      "service_unavailable",
      "Deadline exceeded: the database did not answer within the call's deadline (it answers slowly, or core is overloaded).",
    );
  if (isDatabaseOutage(error)) return errors.unavailable();
  return undefined;
}

/**
 * The database did not answer, could not be reached, or had no primary (an election): by the driver's error
 * classes and the server's error codes, never by message text.
 */
export function isDatabaseOutage(error: unknown): boolean {
  return (
    (error instanceof MongoServerError && typeof error.code === "number" && ELECTION_ERROR_CODES.has(error.code)) ||
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoOperationTimeoutError
  );
}
