import type { IncomingMessage } from "node:http";
import type { RequestHandler } from "express";
import { ApiError } from "../errors.js";
import { addressBucket, clientAddress } from "../transport/client-address.js";
import type { RateLimitDecision, RateLimiter } from "./interface.js";

/**
 * The limit on traffic before a key is verified, per client address (behind
 * trusted proxies, the address they forwarded for): every request costs a
 * token, so presenting random keys cannot make core look up keys without end.
 * Buckets are `addr:<ip>`, next to the per-key ones (`key_…`) in one limiter.
 */
export class AddressRateLimit {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly perSecond: number,
    private readonly trustedProxies: ReadonlySet<string>,
  ) {}

  /** One token from the request's address bucket; rejects when the shared store is unreachable. */
  take(req: IncomingMessage): Promise<RateLimitDecision> {
    return this.takeFor(clientAddress(req, this.trustedProxies));
  }

  /** The same for a client address already known (e.g. a socket's peer when no request could be parsed). */
  takeFor(address: string): Promise<RateLimitDecision> {
    // One bucket per canonical address, an IPv6 client's per /64 (CONTRACT.md section 8).
    return this.limiter.take(`addr:${addressBucket(address)}`, this.perSecond);
  }

  /**
   * Up to `count` tokens of an address's bucket, one after the other, stopping at the first refused: how many
   * it got. Each key a plain-HTTP request makes the gateway look up costs one (CONTRACT.md section 8).
   */
  async takeUpTo(address: string, count: number): Promise<number> {
    let granted = 0;
    while (granted < count && (await this.takeFor(address)).allowed) granted++;
    return granted;
  }

  /** For HTTPS requests: 429 `rate_limited` with Retry-After over the limit, 503 when the store is unreachable. */
  middleware(): RequestHandler {
    return async (req, _res, next) => {
      let decision: RateLimitDecision;
      try {
        decision = await this.take(req);
      } catch {
        throw ApiError.unavailable();
      }
      if (!decision.allowed) {
        throw new ApiError(
          "rate_limited",
          "Too many requests from this address hit the API too quickly. Retry after the number of seconds in the Retry-After header.",
          {
            headers: { "Retry-After": String(decision.retryAfterSeconds) },
          },
        );
      }
      next();
    };
  }
}
