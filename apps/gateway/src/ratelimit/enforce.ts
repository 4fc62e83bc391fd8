import { ApiError } from "../errors.js";
import type { Principal } from "../http/principal.js";
import type { RateLimiter } from "./interface.js";

export interface RateLimits {
  readonly live: number;
  readonly test: number;
}

/**
 * One token from the key's bucket, or 429 `rate_limited` with Retry-After; 503 when the shared store is unreachable,
 * its cause told to `failed` (the caller logs it: the client's 503 says nothing of it).
 */
export async function enforceRateLimit(limiter: RateLimiter, limits: RateLimits, principal: Principal, failed?: (cause: unknown) => void): Promise<void> {
  let decision: Awaited<ReturnType<RateLimiter["take"]>>;
  try {
    decision = await limiter.take(principal.keyId, principal.tenant.livemode ? limits.live : limits.test);
  } catch (cause) {
    failed?.(cause);
    throw ApiError.unavailable();
  }
  if (!decision.allowed) {
    throw new ApiError("rate_limited", "Too many requests hit the API too quickly. Retry after the number of seconds in the Retry-After header.", {
      headers: { "Retry-After": String(decision.retryAfterSeconds) },
    });
  }
}
