/**
 * gRPC metadata keys between the gateway (or the CLI) and core. Keys are
 * lower-case, as gRPC sends them.
 */

/** The credential of every call: `Bearer <token>` (admin token or the gateway's own). */
export const AUTHORIZATION_METADATA = "authorization";
/** The public request's id, recorded in core's logs and events. */
export const REQUEST_ID_METADATA = "rms-request-id";
/** The client's Idempotency-Key header of a POST, recorded with the write. */
export const IDEMPOTENCY_KEY_METADATA = "idempotency-key";
/**
 * The gateway's fingerprint of a POST under an Idempotency-Key (method, path, RPC and request message): what "the
 * same request" means to core's idempotency records (apps/core/src/grpc/idempotent.ts).
 */
export const REQUEST_FINGERPRINT_METADATA = "rms-request-fingerprint";
/** The headers the gateway's answer to a keyed POST will carry (JSON, opaque to core), recorded with that answer. */
export const ANSWER_HEADERS_METADATA = "rms-answer-headers";
/** The API key the client presented, and the id of the key it was verified as: core re-checks it in the same call. */
export const PRESENTED_KEY_METADATA = "rms-api-key";
export const PRESENTED_KEY_ID_METADATA = "rms-api-key-id";

/** Metadata that carries a token as the call's credential. */
export function bearerMetadata(token: string): { [AUTHORIZATION_METADATA]: string } {
  return { [AUTHORIZATION_METADATA]: `Bearer ${token}` };
}

/** The token of an `authorization: Bearer <token>` value, or null. */
export function bearerToken(value: unknown): string | null {
  return typeof value === "string" && value.startsWith("Bearer ") ? value.slice("Bearer ".length) : null;
}

/**
 * Core's trailer on an answer replayed under an Idempotency-Key (JSON, `IdempotentReplayTrailer`): the first
 * answer's request id and the headers the gateway gave with it; the gateway sends it as a replay.
 */
export const REPLAY_METADATA = "rms-replay";

/** What `REPLAY_METADATA` holds. */
export interface IdempotentReplayTrailer {
  /** The id of the request answered first. */
  readonly requestId: string;
  /** The answer's headers as the gateway gave them (`ANSWER_HEADERS_METADATA`, JSON text; "[]" when none). */
  readonly headers: string;
}
