import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];
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

  /** The key no longer works: the tab goes back to sign-in with this message. */
  get signedOut(): boolean {
    return this.status === 401;
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

/** What the client does when the API refuses the key (401): forget it and show sign-in with the API's message. */
let onSignedOut: (failure: ApiFailure) => void = () => {};
export function whenSignedOut(handler: (failure: ApiFailure) => void): void {
  onSignedOut = handler;
}

function authMiddleware(key: KeySource): Middleware {
  return {
    onRequest({ request }) {
      const secret = key();
      if (secret) request.headers.set("Authorization", `Bearer ${secret}`);
      return request;
    },
  };
}

/** The typed client of the public API, on this origin (the dashboard uses the `/v1` API and nothing else). */
export function apiClient(key: KeySource) {
  const client = createClient<paths>({ baseUrl: globalThis.location?.origin ?? "https://localhost" });
  client.use(authMiddleware(key));
  return client;
}

export type Client = ReturnType<typeof apiClient>;

/** The data of an openapi-fetch answer, or the ApiFailure it stands for (a 401 also signs the tab out). */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response };
  try {
    result = await call;
  } catch (cause) {
    throw networkFailure(cause);
  }
  if (result.response.ok && result.data !== undefined) return result.data;
  const failure = failureOf(result.response.status, result.error, result.response.headers.get("Request-Id"));
  if (failure.signedOut) onSignedOut(failure);
  throw failure;
}
