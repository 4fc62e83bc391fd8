import { MongoClient } from "mongodb";
import type { Logger } from "pino";
import type { GatewayConfig } from "./config.js";
import { ensureSecondaryIndexes } from "./db-engine.js";
import { CLEANUP_INTERVAL_MS, MongoIdempotencyStore, type IdempotencyStore } from "./idempotency/index.js";
import { MemoryRateLimiter, MongoRateLimiter, type RateLimiter } from "./ratelimit/index.js";
import { MongoPendingRevocationStore, type PendingRevocationStore } from "./revocation/pending-store.js";

/** The gateway's own state: idempotency records, rate-limit buckets and revocations not yet done. */
export interface GatewayStores {
  readonly idempotency: IdempotencyStore;
  readonly rateLimiter: RateLimiter;
  readonly revocations: PendingRevocationStore;
  close(): Promise<void>;
}

/** Fail fast while the database is unreachable (503), and reconnect by itself when it is back. */
const MONGO_OPTIONS = { serverSelectionTimeoutMS: 2_000, connectTimeoutMS: 2_000, socketTimeoutMS: 10_000, appName: "rms-gateway" } as const;

/**
 * Connects to MongoDB lazily (the gateway starts even while the database is
 * down; requests that need it get 503 until it is back), creates indexes in
 * the background (only on engines that use them: see db-engine.ts) and runs
 * the periodic cleanup of expired idempotency records.
 */
export function openStores(
  config: Pick<GatewayConfig, "mongoUri" | "mongoDatabase" | "rateLimitStore">,
  logger: Logger,
  overrides: { idempotency?: IdempotencyStore | undefined; rateLimiter?: RateLimiter | undefined } = {},
): GatewayStores {
  const mongo = new MongoClient(config.mongoUri, MONGO_OPTIONS);
  const db = mongo.db(config.mongoDatabase);
  const mongoIdempotency = overrides.idempotency ? undefined : new MongoIdempotencyStore(db, { logger });
  const idempotency = overrides.idempotency ?? mongoIdempotency!;
  const mongoLimiter = overrides.rateLimiter || config.rateLimitStore !== "mongodb" ? undefined : new MongoRateLimiter(db);
  const rateLimiter = overrides.rateLimiter ?? mongoLimiter ?? new MemoryRateLimiter();
  const revocations = new MongoPendingRevocationStore(db);

  let stopped = false;
  const indexes = async () => {
    for (let delay = 1_000; !stopped; delay = Math.min(delay * 2, 30_000)) {
      try {
        await ensureSecondaryIndexes(db, [mongoIdempotency, mongoLimiter, revocations]);
        return;
      } catch (error) {
        logger.warn({ err: error instanceof Error ? error.message : String(error) }, "gateway indexes not created yet; retrying");
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
      }
    }
  };
  void indexes();
  const cleanup = setInterval(() => {
    idempotency.removeExpired().then(
      (removed) => removed > 0 && logger.info({ removed }, "expired idempotency records removed"),
      (error: unknown) => logger.warn({ err: error instanceof Error ? error.message : String(error) }, "idempotency cleanup failed"),
    );
  }, CLEANUP_INTERVAL_MS);
  cleanup.unref();

  return {
    idempotency,
    rateLimiter,
    revocations,
    async close() {
      stopped = true;
      clearInterval(cleanup);
      await Promise.all([idempotency.close(), rateLimiter.close()]);
      await mongo.close();
    },
  };
}
