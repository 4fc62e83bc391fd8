import { headersOf } from "./response.js";

/** The fields of an API error (the error envelope's, and the response's). */
export interface RMSErrorFields {
  readonly type: string;
  readonly code?: string | undefined;
  readonly param?: string | undefined;
  readonly message: string;
  readonly statusCode?: number | undefined;
  readonly requestId?: string | undefined;
  readonly headers?: Readonly<Record<string, string>> | undefined;
  readonly cause?: unknown;
}

/** An error of the API (or of reaching it): one subclass per error `type`, each with the request's id. */
export class RMSError extends Error {
  /** The error's `type`: `invalid_request_error`, `authentication_error`, ..., `connection_error`. */
  readonly type: string;
  /** The machine code (`resource_missing`, `rate_limited`, ...). */
  readonly code: string | undefined;
  /** The parameter at fault, when there is one. */
  readonly param: string | undefined;
  /** The HTTP status; undefined when no answer came. */
  readonly statusCode: number | undefined;
  /** The `Request-Id` of the answer (the error's `request_id`): quote it when asking for help. */
  readonly requestId: string | undefined;
  /** The answer's headers (lower-case names); empty when no answer came. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(fields: RMSErrorFields) {
    super(fields.message, fields.cause !== undefined ? { cause: fields.cause } : undefined);
    this.name = new.target.name;
    this.type = fields.type;
    this.code = fields.code;
    this.param = fields.param;
    this.statusCode = fields.statusCode;
    this.requestId = fields.requestId;
    this.headers = fields.headers ?? {};
  }
}

/** 400/404/405/409/413/415: a request the API refuses as it stands. */
export class RMSInvalidRequestError extends RMSError {}
/** 401: no valid key (missing, invalid, expired, revoked). */
export class RMSAuthenticationError extends RMSError {}
/** 403: a valid key that may not do this. */
export class RMSPermissionError extends RMSError {}
/** 429: too many requests for this key. */
export class RMSRateLimitError extends RMSError {}
/** An `Idempotency-Key` reused for another request (400), or still in flight (409). */
export class RMSIdempotencyError extends RMSError {}
/** 5xx: the API failed (its message leaks nothing); nothing was half-written. */
export class RMSAPIError extends RMSError {}
/** No answer: the network failed or an attempt timed out, after every retry. */
export class RMSConnectionError extends RMSError {}

const BY_TYPE: Readonly<Record<string, new (fields: RMSErrorFields) => RMSError>> = {
  invalid_request_error: RMSInvalidRequestError,
  authentication_error: RMSAuthenticationError,
  permission_error: RMSPermissionError,
  rate_limit_error: RMSRateLimitError,
  idempotency_error: RMSIdempotencyError,
  api_error: RMSAPIError,
};

interface ErrorEnvelope {
  error?: { type?: unknown; code?: unknown; message?: unknown; param?: unknown; request_id?: unknown };
}

const text = (value: unknown) => (typeof value === "string" ? value : undefined);

/** The error an answer stands for: from its error envelope, else from its status alone (a proxy's page, an empty body). */
export function errorOfAnswer(status: number, headers: Headers, body: unknown): RMSError {
  const envelope = (body !== null && typeof body === "object" ? (body as ErrorEnvelope).error : undefined) ?? {};
  const type =
    text(envelope.type) ??
    (status === 401
      ? "authentication_error"
      : status === 403
        ? "permission_error"
        : status === 429
          ? "rate_limit_error"
          : status >= 500
            ? "api_error"
            : "invalid_request_error");
  const Class = BY_TYPE[type] ?? RMSError;
  return new Class({
    type,
    code: text(envelope.code),
    param: text(envelope.param),
    message: text(envelope.message) ?? `The API answered HTTP ${status} without an error message.`,
    statusCode: status,
    requestId: text(envelope.request_id) ?? headers.get("request-id") ?? undefined,
    headers: headersOf(headers),
  });
}

/** The error of a request that got no answer. */
export function connectionError(cause: unknown, attempts: number): RMSConnectionError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  const tries = attempts === 1 ? "1 attempt" : `${attempts} attempts`;
  return new RMSConnectionError({ type: "connection_error", message: `The API could not be reached (${tries}): ${reason}`, cause });
}

/** A webhook delivery whose signature, timestamp or headers do not check out: refuse it (answer 400). */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}
