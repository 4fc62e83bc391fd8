/**
 * The answer for one request, with what the bucket holds after it: `remaining` requests left in the window and
 * `resetSeconds` until it is full again (whole seconds, rounded down), for the RateLimit header.
 */
export type RateLimitDecision =
  | { readonly allowed: true; readonly remaining: number; readonly resetSeconds: number }
  | { readonly allowed: false; readonly retryAfterSeconds: number; readonly remaining: 0; readonly resetSeconds: number };

/**
 * A rate limiter keyed by bucket (the API key's id): `perSecond` requests per
 * second, bursts up to `perSecond`. Implementations: in-process (one gateway)
 * and MongoDB (shared by several gateway processes).
 */
export interface RateLimiter {
  /** Takes one token from the bucket; rejects (the caller answers 503) when the shared store is unreachable. */
  take(bucket: string, perSecond: number): Promise<RateLimitDecision>;
  close(): Promise<void>;
}
