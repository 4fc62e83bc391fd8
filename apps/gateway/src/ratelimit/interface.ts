/** The answer for one request. */
export type RateLimitDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

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
