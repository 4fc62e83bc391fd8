import { isDuplicateKeyError } from "@rms/proto";
import type { Collection, Db } from "mongodb";
import type { RateLimitDecision, RateLimiter } from "./interface.js";

/** One token taken: `<bucket>|<window>|<slot>`. */
interface TokenRecord {
  _id: string;
  b: string;
  w: number;
}

export const RATE_LIMIT_COLLECTION = "rate_limit_tokens";
const WINDOW_MS = 1_000;

/**
 * A limiter shared by several gateway processes through MongoDB, built on
 * inserts only (atomic on every MongoDB-protocol engine, with no conditional update to race):
 * each one-second window of a bucket has `perSecond` slots, and a request is
 * allowed when it inserts one of them under its unique `_id`. That is a token
 * bucket of capacity `perSecond` refilled in one step at each window start.
 * No two requests ever take one slot, so the limit holds exactly across
 * processes. Old windows are deleted by a periodic `deleteMany`.
 */
export class MongoRateLimiter implements RateLimiter {
  private readonly tokens: Collection<TokenRecord>;
  /** Per bucket: the window and slot to try next (a hint; the unique index decides). */
  private readonly hints = new Map<string, { w: number; slot: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    db: Db,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = db.collection<TokenRecord>(RATE_LIMIT_COLLECTION);
    this.sweeper = setInterval(() => void this.removeOld().catch(() => undefined), 5_000);
    this.sweeper.unref();
  }

  async ensureIndexes(): Promise<void> {
    await this.tokens.createIndex({ b: 1, w: 1 }, { name: "bucket_window" });
    await this.tokens.createIndex({ w: 1 }, { name: "window" });
  }

  async take(bucket: string, perSecond: number): Promise<RateLimitDecision> {
    const now = this.now();
    const w = Math.floor(now / WINDOW_MS);
    const hint = this.hints.get(bucket);
    let slot = hint && hint.w === w ? hint.slot : 0;
    // Each failed insert moves to a higher slot, so this ends after at most `perSecond` attempts.
    while (slot < perSecond) {
      try {
        await this.tokens.insertOne({ _id: `${bucket}|${w}|${slot}`, b: bucket, w });
        this.hints.set(bucket, { w, slot: slot + 1 });
        return { allowed: true };
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
      }
      // Taken by another request: skip ahead past what is already taken in this window.
      slot = Math.max(slot + 1, await this.tokens.countDocuments({ b: bucket, w }));
    }
    this.hints.set(bucket, { w, slot: perSecond });
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(((w + 1) * WINDOW_MS - now) / 1000)) };
  }

  /** Deletes windows older than the previous one. */
  async removeOld(): Promise<number> {
    const { deletedCount } = await this.tokens.deleteMany({ w: { $lt: Math.floor(this.now() / WINDOW_MS) - 1 } });
    if (this.hints.size > 10_000) this.hints.clear();
    return deletedCount;
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.resolve();
  }
}
