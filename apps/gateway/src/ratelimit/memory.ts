import type { RateLimitDecision, RateLimiter } from "./interface.js";

interface Bucket {
  tokens: number;
  updated: number;
}

/**
 * Token buckets in process memory: capacity `perSecond`, refilled continuously
 * at `perSecond` tokens per second. Buckets that are full again are forgotten.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly now: () => number = Date.now) {
    this.sweeper = setInterval(() => this.sweep(), 10_000);
    this.sweeper.unref();
  }

  take(bucketId: string, perSecond: number): Promise<RateLimitDecision> {
    const now = this.now();
    const bucket = this.buckets.get(bucketId) ?? { tokens: perSecond, updated: now };
    bucket.tokens = Math.min(perSecond, bucket.tokens + ((now - bucket.updated) / 1000) * perSecond);
    bucket.updated = now;
    this.buckets.set(bucketId, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return Promise.resolve({ allowed: true, remaining: Math.floor(bucket.tokens), resetSeconds: Math.floor((perSecond - bucket.tokens) / perSecond) });
    }
    const retryAfterSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond));
    return Promise.resolve({ allowed: false, retryAfterSeconds, remaining: 0, resetSeconds: retryAfterSeconds });
  }

  /** Drops buckets idle long enough to be full (one second refills any bucket). */
  private sweep(): void {
    const now = this.now();
    for (const [id, bucket] of this.buckets) if (now - bucket.updated > 1_000) this.buckets.delete(id);
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.resolve();
  }
}
