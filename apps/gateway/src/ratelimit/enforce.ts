import { ApiError } from "../errors.js";
import type { Principal } from "../auth/principal.js";
import type { Response } from "express";
import type { RateLimitDecision, RateLimiter } from "./interface.js";

export interface RateLimits {
  readonly live: number;
  readonly test: number;
}

/** The IETF draft "RateLimit header fields for HTTP": the key's policy and what is left of it. */
export const RATE_LIMIT_POLICY_HEADER = "RateLimit-Policy";
export const RATE_LIMIT_HEADER = "RateLimit";

/** The two headers of a decision: `"key";q=<per second>;w=1` and `"key";r=<left>;t=<seconds to reset>`. */
export function rateLimitHeaders(perSecond: number, decision: RateLimitDecision): Record<string, string> {
  return {
    [RATE_LIMIT_POLICY_HEADER]: `"key";q=${perSecond};w=1`,
    [RATE_LIMIT_HEADER]: `"key";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}

/**
 * One token from the key's bucket, or 429 `rate_limited` with Retry-After; 503 when the shared store is
 * unreachable (its cause told to `failed`: the caller logs it, the client's 503 says nothing of it). The answer carries
 * RateLimit-Policy and RateLimit (set on `res` here, so every later answer
 * to the request has them, the 429 too), from the token just taken or refused.
 */
export async function enforceRateLimit(
  limiter: RateLimiter,
  limits: RateLimits,
  principal: Principal,
  res?: Response,
  failed?: (cause: unknown) => void,
): Promise<void> {
  let decision: RateLimitDecision;
  const perSecond = principal.tenant.livemode ? limits.live : limits.test;
  try {
    decision = await limiter.take(principal.keyId, perSecond);
  } catch (cause) {
    failed?.(cause);
    throw ApiError.unavailable();
  }
  const headers = rateLimitHeaders(perSecond, decision);
  if (res) for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  if (!decision.allowed) {
    throw new ApiError("rate_limited", "Too many requests hit the API too quickly. Retry after the number of seconds in the Retry-After header.", {
      headers: { "Retry-After": String(decision.retryAfterSeconds), ...headers },
    });
  }
}
