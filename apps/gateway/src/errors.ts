import { status as GrpcStatus } from "@grpc/grpc-js";
import {
  errorTypeOf,
  httpStatusOf,
  isErrorCode,
  isRetryable,
  PUBLIC_ERROR_CODES,
  RpcError,
  standardMessageOf,
  type ErrorCode,
  type ErrorType,
} from "@rms/proto";

/**
 * The public error codes live in the shared catalogue (@rms/proto's ERROR_CATALOGUE):
 * each code has one HTTP status, one type, and whether a retry may succeed
 * (`Stripe-Should-Retry`). This module renders them.
 */
export { errorTypeOf, httpStatusOf, isErrorCode, isRetryable, type ErrorCode, type ErrorType } from "@rms/proto";

/** Every public error code with its HTTP status and type, in catalogue order (for the API description). */
export function errorCatalogue(): { code: ErrorCode; status: number; type: ErrorType }[] {
  return PUBLIC_ERROR_CODES.map((code) => ({ code, status: httpStatusOf(code), type: errorTypeOf(code) }));
}

/** How much of a message or param an error carries at most: input echoed in them is cut, never sent whole. */
export const MESSAGE_LIMIT_CHARS = 500;
export const PARAM_LIMIT_CHARS = 200;

function capped(text: string, limit: number): string {
  const chars = [...text];
  return chars.length <= limit ? text : `${chars.slice(0, limit).join("")}…`;
}

/** Seconds a client should wait before retrying a 429 or 503. */
export const RETRY_AFTER_SECONDS = 1;

/** The one error class handlers throw; the error middleware renders it. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly type: ErrorType;
  readonly status: number;
  readonly param: string | undefined;
  /** Extra response headers, e.g. Allow or WWW-Authenticate. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { param?: string | undefined; headers?: Record<string, string>; type?: ErrorType; cause?: unknown } = {},
  ) {
    // `cause`: what went wrong behind it, for the log only (never sent).
    super(capped(message, MESSAGE_LIMIT_CHARS), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ApiError";
    this.code = code;
    this.type = options.type ?? errorTypeOf(code);
    this.status = httpStatusOf(code);
    // An empty name is a name (`-d "=x"`, JSON `{"":1}`): only an absent param is left out.
    this.param = options.param !== undefined ? capped(options.param, PARAM_LIMIT_CHARS) : undefined;
    const headers: Record<string, string> = { ...options.headers };
    if (this.status === 401) headers["WWW-Authenticate"] = "Bearer";
    if (this.status === 429 || this.status === 503) headers["Retry-After"] ??= String(RETRY_AFTER_SECONDS);
    headers["Stripe-Should-Retry"] = String(isRetryable(code));
    this.headers = headers;
  }

  /** An error of a code with a standard message (the catalogue's). */
  static standard(code: "idempotency_key_reused" | "internal_error" | "outcome_unknown" | "service_unavailable", cause?: unknown): ApiError {
    return new ApiError(code, standardMessageOf(code)!, cause === undefined ? {} : { cause });
  }

  static internal(): ApiError {
    return ApiError.standard("internal_error");
  }

  /** A write was sent but no answer came back: it may or may not have happened; a retry under the same Idempotency-Key is safe. */
  static outcomeUnknown(cause?: unknown): ApiError {
    return ApiError.standard("outcome_unknown", cause);
  }

  static unavailable(cause?: unknown): ApiError {
    return ApiError.standard("service_unavailable", cause);
  }
}

/** HTTP status for a gRPC status code of a failed core call; undefined means "a bug" (500). */
function httpStatusOfGrpc(code: GrpcStatus): number | undefined {
  switch (code) {
    case GrpcStatus.INVALID_ARGUMENT:
      return 400;
    case GrpcStatus.UNAUTHENTICATED:
      return 401;
    case GrpcStatus.PERMISSION_DENIED:
      return 403;
    case GrpcStatus.NOT_FOUND:
      return 404;
    case GrpcStatus.ALREADY_EXISTS:
    case GrpcStatus.ABORTED:
    case GrpcStatus.FAILED_PRECONDITION:
      return 409;
    case GrpcStatus.RESOURCE_EXHAUSTED:
      return 429;
    case GrpcStatus.OUT_OF_RANGE:
      return 416;
    case GrpcStatus.UNKNOWN:
      return 500; // with code outcome_unknown: a write whose commit core could not confirm
    case GrpcStatus.UNAVAILABLE:
    case GrpcStatus.DEADLINE_EXCEEDED:
    case GrpcStatus.CANCELLED:
      return 503;
    default:
      return undefined;
  }
}

/**
 * The one translation of a core failure into a public error: the gRPC status
 * picks the HTTP status, the structured detail gives type/code/param/message.
 * A code outside the catalogue, or one whose status disagrees with the gRPC
 * status, is a bug between the services: it becomes a generic 500.
 */
export function fromCoreError(error: unknown): ApiError {
  if (!(error instanceof RpcError)) return ApiError.internal();
  const status = httpStatusOfGrpc(error.grpcCode);
  if (status === 503) return ApiError.unavailable(error);
  // A refused argument (INVALID_ARGUMENT) may be a 400, or a body core found too large (413, a file past its limit).
  const agrees = (code: string) => httpStatusOf(code as never) === status || (status === 400 && httpStatusOf(code as never) === 413);
  if (status === undefined || !isErrorCode(error.code) || !agrees(error.code)) return ApiError.internal();
  return new ApiError(error.code, error.message, { param: error.param, type: errorTypeOf(error.code) });
}

/** The error envelope, keys in contract order, `param` only when there is one. */
export function errorBody(error: ApiError, requestId: string): string {
  return JSON.stringify({
    error: {
      type: error.type,
      code: error.code,
      message: error.message,
      ...(error.param !== undefined ? { param: error.param } : {}),
      request_id: requestId,
    },
  });
}

/** Turns anything thrown into an ApiError: unknown errors become a generic 500. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof RpcError) return fromCoreError(error);
  // Express/router errors about the request itself (e.g. a malformed %-escape in the path).
  if (error instanceof URIError || (isHttpError(error) && error.status === 400 && error.expose)) {
    return new ApiError("parameter_invalid", "The request URL is malformed.");
  }
  return ApiError.internal();
}

function isHttpError(error: unknown): error is { status: number; expose: boolean } {
  return typeof error === "object" && error !== null && typeof (error as { status?: unknown }).status === "number";
}
