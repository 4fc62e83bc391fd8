/** The client's options (`new RMS(apiKey, options)`). */
export interface ClientOptions {
  /** Where the API is: `https://localhost:8443` by default (what `npm start` serves). */
  readonly baseUrl?: string;
  /** A certificate (PEM text or its bytes) trusted besides the system's roots, such as the development stack's `.data/tls/cert.pem` (Node). */
  readonly ca?: string | Uint8Array;
  /** Retries of a request that failed on the network, 429, 409 `idempotency_key_in_use` or 5xx: 2 by default. */
  readonly maxNetworkRetries?: number;
  /** How long one attempt may wait for its answer, in milliseconds: 80,000 by default. */
  readonly timeoutMs?: number;
  /** The `fetch` to send requests with, instead of the platform's own (Node: `node:https`; browsers: `fetch`). */
  readonly fetch?: typeof fetch;
}

/** Options of one call, its last argument. */
export interface RequestOptions {
  /** The `Idempotency-Key` of a POST; one is made for every POST and DELETE without it (the same on each retry of the call). */
  readonly idempotencyKey?: string;
  /** Another key for this call only. */
  readonly apiKey?: string;
  /** How long one attempt may wait for its answer, in milliseconds. */
  readonly timeoutMs?: number;
  /** Retries of this call (see `ClientOptions.maxNetworkRetries`). */
  readonly maxNetworkRetries?: number;
  /** Ends the call (and its retries) when aborted. */
  readonly signal?: AbortSignal;
}

/** The options every call settles on: the client's, overridden by the call's. */
export interface SettledOptions {
  readonly apiKey: string;
  readonly timeoutMs: number;
  readonly maxNetworkRetries: number;
  readonly idempotencyKey: string | undefined;
  readonly signal: AbortSignal | undefined;
}

export const DEFAULT_BASE_URL = "https://localhost:8443";
export const DEFAULT_TIMEOUT_MS = 80_000;
export const DEFAULT_MAX_NETWORK_RETRIES = 2;
