import { IDEMPOTENCY_RETENTION_MS, idempotencyScopeId } from "@rms/proto";

/**
 * The idempotency record store: one record per account + mode + Idempotency-Key,
 * holding the request fingerprint, a lock with an expiry, and (once done) the
 * recorded response. See docs/idempotency-and-limits.md.
 */

/** Whose key it is: keys are scoped to account + mode. */
export interface IdempotencyScope {
  readonly accountId: string;
  readonly livemode: boolean;
  readonly key: string;
}

/** One header of a recorded answer, named as it was first sent. */
export interface RecordedHeader {
  readonly name: string;
  readonly value: string | readonly string[];
}

/** A response as first sent: status, headers and body bytes. */
export interface RecordedResponse {
  readonly status: number;
  readonly body: Buffer;
  /** Request id of the request that produced it. */
  readonly requestId: string;
  /**
   * Its headers but the per-request ones (replay.ts `answerHeaders`), replayed as they were. Absent from
   * records written before headers were recorded (such a replay sends only the headers every answer gets).
   */
  readonly headers?: readonly RecordedHeader[];
}

/** The lock on a key, held while the request executes. */
export interface IdempotencyLease {
  /** Records the response and ends the lock; later repeats replay it. */
  complete(response: RecordedResponse): Promise<void>;
  /** Ends the lock without recording anything, so the key can be used again. */
  release(): Promise<void>;
}

export type BeginResult = { readonly kind: "acquired"; readonly lease: IdempotencyLease } | { readonly kind: "replay"; readonly response: RecordedResponse };

export interface IdempotencyStore {
  /**
   * Takes the lock for a key, or finds the recorded response. Throws ApiError:
   * 400 `idempotency_key_reused` (other fingerprint), 409 `idempotency_key_in_use`
   * (locked by a request still executing), 503 `service_unavailable` (store unreachable).
   */
  begin(scope: IdempotencyScope, fingerprint: string, requestId: string): Promise<BeginResult>;
  close(): Promise<void>;
}

/** How long a lock blocks repeats; a lock left by a dead gateway stops blocking after this. */
export const LOCK_TIMEOUT_MS = 30_000;
/** Records are kept this long after first use (core binds a key to what it created as long); a TTL index deletes them. */
export const RETENTION_MS = IDEMPOTENCY_RETENTION_MS;

/** The record's `_id`: the same scope id as core's created objects carry. */
export const scopeId = (scope: IdempotencyScope) => idempotencyScopeId(scope.accountId, scope.livemode, scope.key);
