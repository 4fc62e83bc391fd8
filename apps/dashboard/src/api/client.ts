import { RMS, RMSError, type Schemas as ApiSchemas } from "@rms/sdk";

export type Schemas = ApiSchemas;
export type Resource = Schemas["Resource"];
export type Event = Schemas["Event"];
export type Job = Schemas["Job"];
export type WebhookEndpoint = Schemas["WebhookEndpoint"];
export type WebhookAttempt = Schemas["WebhookAttempt"];

/** An API error as the dashboard shows it: the API's message and the request's id (CONTRACT.md section 2). */
export class ApiFailure extends Error {
  readonly status: number;
  readonly type: string;
  readonly code: string;
  readonly param: string | undefined;
  readonly requestId: string | null;

  constructor(fields: { status: number; type: string; code: string; message: string; param?: string | undefined; requestId: string | null }) {
    super(fields.message);
    this.name = "ApiFailure";
    this.status = fields.status;
    this.type = fields.type;
    this.code = fields.code;
    this.param = fields.param;
    this.requestId = fields.requestId;
  }

  /** The server has no such route (a feature this gateway does not have yet): `404 route_missing`. */
  get routeMissing(): boolean {
    return this.status === 404 && this.code === "route_missing";
  }
}

interface ErrorEnvelope {
  error?: { type?: string; code?: string; message?: string; param?: string; request_id?: string };
}

/** The failure an answer stands for: from the error envelope when there is one, else from the status alone. */
export function failureOf(status: number, body: unknown, requestIdHeader: string | null): ApiFailure {
  const error = (body as ErrorEnvelope | null)?.error;
  return new ApiFailure({
    status,
    type: error?.type ?? "api_error",
    code: error?.code ?? "unexpected_answer",
    message: error?.message ?? `The API answered HTTP ${status} without an error message.`,
    param: error?.param,
    requestId: error?.request_id ?? requestIdHeader,
  });
}

/** A network failure (no answer at all), shown like an API error without a request id. */
export function networkFailure(cause: unknown): ApiFailure {
  return new ApiFailure({
    status: 0,
    type: "network_error",
    code: "network_error",
    message: `The API could not be reached: ${cause instanceof Error ? cause.message : String(cause)}`,
    requestId: null,
  });
}

type KeySource = () => string | null;

/**
 * What the client does when the API refuses a key (401): told the refusal and the key the request carried, which may
 * no longer be the tab's (a request sent before a sign-out, answered after the next sign-in).
 */
let onSignedOut: (failure: ApiFailure, refusedKey: string) => void = () => {};
export function whenSignedOut(handler: (failure: ApiFailure, refusedKey: string) => void): void {
  onSignedOut = handler;
}

/** Tells the handler of a refusal of `sentKey`, with the API's message (read from a copy: the SDK reads the answer). */
async function refused(response: Response, sentKey: string): Promise<void> {
  const body = await response
    .clone()
    .json()
    .catch(() => null);
  onSignedOut(failureOf(response.status, body, response.headers.get("request-id")), sentKey);
}

/** The API's origin: this page's (the dashboard uses the `/v1` API of the gateway that serves it, and nothing else). */
export const API_ORIGIN = globalThis.location?.origin ?? "https://localhost";

/**
 * The client of the public API: the SDK, on this origin, with the tab's key read at every request (so signing in or
 * out changes the key of the next call, not the client); no key, no Authorization header (401 `api_key_missing`). A
 * 401 to a request that carried a key is told to `whenSignedOut`'s handler with that key.
 */
export function apiClient(key: KeySource): RMS {
  return new RMS("tab-key", {
    baseUrl: API_ORIGIN,
    fetch: async (input, init) => {
      const headers = new Headers(init?.headers);
      const secret = key();
      if (secret) headers.set("Authorization", `Bearer ${secret}`);
      else headers.delete("Authorization");
      const response = await globalThis.fetch(input, { ...init, headers });
      if (response.status === 401 && secret) await refused(response, secret);
      return response;
    },
  });
}

export type Client = RMS;

/** The ApiFailure of an SDK error (the API's answer, or none at all). */
export function failureOfError(error: unknown): ApiFailure {
  if (error instanceof ApiFailure) return error;
  if (error instanceof RMSError && error.statusCode !== undefined) {
    return new ApiFailure({
      status: error.statusCode,
      type: error.type,
      code: error.code ?? "unexpected_answer",
      message: error.message,
      param: error.param,
      requestId: error.requestId ?? null,
    });
  }
  return networkFailure(error instanceof RMSError && error.cause !== undefined ? error.cause : error);
}

/** The answer of an SDK call, or the ApiFailure it stands for (a 401 has signed the tab out already: `apiClient`). */
export async function unwrap<T>(call: PromiseLike<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof DOMException && error.name === "AbortError") throw error;
    throw failureOfError(error);
  }
}
