import { status as GrpcStatus } from "@grpc/grpc-js";
import { RpcError } from "../grpc/rpc-error.js";

/** The public error types (CONTRACT.md section 2, in ../shared/docs/). */
export type ErrorType = "invalid_request_error" | "idempotency_error" | "authentication_error" | "permission_error" | "rate_limit_error" | "api_error";

interface CatalogueEntry {
  /** The status core fails a call with under this code. */
  readonly grpc: GrpcStatus;
  /** The gateway's HTTP status for it. */
  readonly http: number;
  readonly type: ErrorType;
  /** Repeating the same request may succeed (`Stripe-Should-Retry: true`). */
  readonly retryable?: true;
  /** Never shown to API clients: core's own credentials; the gateway answers 500 if one reaches it. */
  readonly internal?: true;
  /** The message of a code that always says the same thing. */
  readonly message?: string;
}

const { INVALID_ARGUMENT, UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, ABORTED, RESOURCE_EXHAUSTED, INTERNAL, UNKNOWN, UNAVAILABLE } = GrpcStatus;
const invalid = { grpc: INVALID_ARGUMENT, http: 400, type: "invalid_request_error" } as const;
const unauthenticated = { grpc: UNAUTHENTICATED, http: 401, type: "authentication_error" } as const;

/**
 * The one catalogue of error codes, shared by core and gateway: a new code is
 * added here and nowhere else. Order is the order of the API description.
 * Codes only the gateway produces carry the status core would use for them.
 */
export const ERROR_CATALOGUE = {
  parameter_missing: invalid,
  parameter_invalid: invalid,
  parameter_invalid_empty: invalid,
  parameter_unknown: invalid,
  string_too_long: invalid,
  metadata_invalid: invalid,
  limit_invalid: invalid,
  url_invalid: invalid,
  // A search query the language of CONTRACT.md section 3 does not parse, or whose clause breaks a filter rule; the message names the position.
  search_query_invalid: invalid,
  // A create that would pass a per-account-and-mode limit (16 webhook endpoints).
  limit_exceeded: invalid,
  // An uploaded file whose type is neither JSONL nor CSV, by its extension or its part's content type (CONTRACT.md section 11).
  file_type_invalid: invalid,
  // An upload completed with parts whose sizes do not add up to its `bytes`.
  upload_incomplete: invalid,
  // Said in the same words by the gateway (its own records) and by core (a create whose key its store had bound to other parameters).
  idempotency_key_reused: {
    ...invalid,
    type: "idempotency_error",
    message:
      "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than the one used on " +
      "the original request.",
  },
  api_key_missing: unauthenticated,
  api_key_invalid: unauthenticated,
  api_key_expired: unauthenticated,
  api_key_revoked: unauthenticated,
  admin_token_invalid: { ...unauthenticated, internal: true },
  insufficient_scope: { grpc: PERMISSION_DENIED, http: 403, type: "permission_error" },
  publishable_key_read_only: { grpc: PERMISSION_DENIED, http: 403, type: "permission_error" },
  https_required: { grpc: PERMISSION_DENIED, http: 403, type: "invalid_request_error" },
  resource_missing: { grpc: NOT_FOUND, http: 404, type: "invalid_request_error" },
  route_missing: { grpc: NOT_FOUND, http: 404, type: "invalid_request_error" },
  // Two sides of one name: at the gateway an HTTP method a route lacks (405); in core a client whose entry of the
  // caller table does not list an RPC (apps/core/src/clients/). The latter reaching the gateway is a bug between the
  // services: its status class (403) disagrees with 405, so the gateway answers 500.
  method_not_allowed: { grpc: PERMISSION_DENIED, http: 405, type: "invalid_request_error" },
  idempotency_key_in_use: { grpc: ABORTED, http: 409, type: "idempotency_error", retryable: true },
  state_conflict: { grpc: ABORTED, http: 409, type: "invalid_request_error" },
  request_too_large: { ...invalid, http: 413 },
  unsupported_media_type: { ...invalid, http: 415 },
  // A `Range` of a file's contents that starts at or past its end (with `Content-Range: bytes */<size>`).
  range_not_satisfiable: { grpc: GrpcStatus.OUT_OF_RANGE, http: 416, type: "invalid_request_error" },
  rate_limited: { grpc: RESOURCE_EXHAUSTED, http: 429, type: "rate_limit_error", retryable: true },
  // A key that already holds the streams it may (10, CONTRACT.md section 14): one of them must end first.
  too_many_streams: { grpc: RESOURCE_EXHAUSTED, http: 429, type: "rate_limit_error", retryable: true },
  internal_error: {
    grpc: INTERNAL,
    http: 500,
    type: "api_error",
    message: "An unexpected error occurred. Please retry the request later, and contact support with the request id if it persists.",
  },
  // A write that may or may not have happened: the same request with the same Idempotency-Key completes it exactly once.
  outcome_unknown: {
    grpc: UNKNOWN,
    http: 500,
    type: "api_error",
    retryable: true,
    message: "The request timed out before its outcome was known: it may or may not have been performed. Retrying it with the same Idempotency-Key is safe.",
  },
  // A watch resumed from a token whose history the database has dropped (apps/core/src/events/watch.ts): the
  // gateway starts a new watch and its streams catch up by position.
  resume_token_lost: { grpc: GrpcStatus.FAILED_PRECONDITION, http: 500, type: "api_error", internal: true },
  service_unavailable: {
    grpc: UNAVAILABLE,
    http: 503,
    type: "api_error",
    retryable: true,
    message: "The service is temporarily unavailable. Retry the request later.",
  },
} as const satisfies Record<string, CatalogueEntry>;

/** Every code, core's internal ones included. */
export type AnyErrorCode = keyof typeof ERROR_CATALOGUE;
/** The codes API clients can see (CONTRACT.md section 2, in ../shared/docs/). */
export type ErrorCode = { [C in AnyErrorCode]: (typeof ERROR_CATALOGUE)[C] extends { internal: true } ? never : C }[AnyErrorCode];

/** The codes of a refused argument (400 `invalid_request_error`): what core's `errors.invalid` may throw. A new one is a catalogue entry. */
export type InvalidArgumentCode = { [C in AnyErrorCode]: (typeof ERROR_CATALOGUE)[C] extends typeof invalid ? C : never }[AnyErrorCode];

const entryOf = (code: AnyErrorCode): CatalogueEntry => ERROR_CATALOGUE[code];

/** The public codes in catalogue order (for the API description and its tests). */
export const PUBLIC_ERROR_CODES = (Object.keys(ERROR_CATALOGUE) as AnyErrorCode[]).filter((code) => !entryOf(code).internal) as ErrorCode[];

/** True for a code API clients may see. */
export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CATALOGUE, code) && !entryOf(code as AnyErrorCode).internal;
}

export function httpStatusOf(code: AnyErrorCode): number {
  return entryOf(code).http;
}

export function grpcStatusOf(code: AnyErrorCode): GrpcStatus {
  return entryOf(code).grpc;
}

export function errorTypeOf(code: AnyErrorCode): ErrorType {
  return entryOf(code).type;
}

export function isRetryable(code: AnyErrorCode): boolean {
  return entryOf(code).retryable === true;
}

/** The fixed message of a code that has one (idempotency_key_reused, internal_error, outcome_unknown, service_unavailable). */
export function standardMessageOf(code: AnyErrorCode): string | undefined {
  return entryOf(code).message;
}

/**
 * A failure of a core call: its gRPC status and type come from the catalogue, never from the call site.
 * The message may be left out for a code with a standard one.
 */
export function catalogueError(code: AnyErrorCode, message = standardMessageOf(code) ?? code, param?: string): RpcError {
  return new RpcError(grpcStatusOf(code), { type: errorTypeOf(code), code, message, ...(param ? { param } : {}) });
}
