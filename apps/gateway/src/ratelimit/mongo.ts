import { isDuplicateKeyError } from "@rms/proto";
import type { Collection, Db } from "mongodb";
import type { RateLimitDecision, RateLimiter } from "./interface.js";

/** One token taken: `<bucket>|<window>|<slot>`. */
interface TokenRecord {
  _id: string;
  b: string;
  w: number;
  /** The end of the window after `w`: from then on the TTL index `expires_at` may delete the token. */
  expires_at: Date;
}

export const RATE_LIMIT_COLLECTION = "rate_limit_tokens";
const WINDOW_MS = 1_000;

/**
 * A limiter shared by several gateway processes through MongoDB, built on
 * inserts only (each atomic under the unique `_id`, with no conditional update
 * to race; acknowledged by a majority, journaled: stores.ts):
 * each one-second window of a bucket has `perSecond` slots, and a request is
 * allowed when it inserts one of them under its unique `_id`. That is a token
 * bucket of capacity `perSecond` refilled in one step at each window start.
 * No two requests ever take one slot, so the limit holds exactly across
 * processes. Old windows are deleted by a TTL index: a window is only used
 * while it is current, and its tokens live at least one window longer (the
 * TTL monitor runs every 60 s, so up to about a minute longer), so a gateway
 * whose clock lags the database's by less than a second still finds them.
 */
export class MongoRateLimiter implements RateLimiter {
  private readonly tokens: Collection<TokenRecord>;
  /** Per bucket: the window and slot to try next (a hint; the unique index decides). */
  private readonly hints = new Map<string, { w: number; slot: number }>();

  constructor(
    db: Db,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = db.collection<TokenRecord>(RATE_LIMIT_COLLECTION);
  }

  async ensureIndexes(): Promise<void> {
    await this.tokens.createIndex({ b: 1, w: 1 }, { name: "bucket_window" });
    await this.tokens.createIndex({ expires_at: 1 }, { name: "expires_at", expireAfterSeconds: 0 });
  }

  async take(bucket: string, perSecond: number): Promise<RateLimitDecision> {
    const now = this.now();
    const w = Math.floor(now / WINDOW_MS);
    const hint = this.hints.get(bucket);
    let slot = hint && hint.w === w ? hint.slot : 0;
    // Each failed insert moves to a higher slot, so this ends after at most `perSecond` attempts.
    while (slot < perSecond) {
      try {
        await this.tokens.insertOne({ _id: `${bucket}|${w}|${slot}`, b: bucket, w, expires_at: new Date((w + 2) * WINDOW_MS) });
        this.hint(bucket, w, slot + 1);
        // Slots are taken in order across gateways (a taken one sends the next try past all taken ones), so the
        // slot says how many this window has given: the same count whichever gateway answers.
        return { allowed: true, remaining: perSecond - 1 - slot, resetSeconds: Math.floor(((w + 1) * WINDOW_MS - now) / 1000) };
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
      }
      // Taken by another request: skip ahead past what is already taken in this window.
      slot = Math.max(slot + 1, await this.tokens.countDocuments({ b: bucket, w }));
    }
    this.hint(bucket, w, perSecond);
    const retryAfterSeconds = Math.max(1, Math.ceil(((w + 1) * WINDOW_MS - now) / 1000));
    return { allowed: false, retryAfterSeconds, remaining: 0, resetSeconds: retryAfterSeconds };
  }

  private hint(bucket: string, w: number, slot: number): void {
    if (this.hints.size >= 10_000 && !this.hints.has(bucket)) this.hints.clear(); // hints only save inserts: bounded
    this.hints.set(bucket, { w, slot });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
