import { MongoClient, WriteConcern, type MongoClientOptions } from "mongodb";
import type { Logger } from "pino";
import type { GatewayConfig } from "./config.js";
import type { Indexed } from "./indexes.js";
import { MemoryRateLimiter, MongoRateLimiter, type RateLimiter } from "./ratelimit/index.js";
import { MongoPendingRevocationStore, type PendingRevocationStore } from "./revocation/pending-store.js";
import { RequestLogStore } from "./request-logs/store.js";
import { MemoryStreamSlots, MongoStreamSlots, type StreamSlots } from "./streams/slots.js";

/** The gateway's own state: rate-limit buckets, revocations not yet done and request logs (idempotency records are core's). */
export interface GatewayStores {
  /** The request logs (docs/request-logs.md): written by the recorder, read by GET /v1/request_logs; core never reads them. */
  readonly requestLogs: RequestLogStore;
  readonly rateLimiter: RateLimiter;
  readonly revocations: PendingRevocationStore;
  /** The places of each key's streams: shared through the database with RATE_LIMIT_STORE=mongodb, else this gateway's own. */
  readonly streamSlots: StreamSlots;
  close(): Promise<void>;
}

/**
 * Every write of the gateway (rate-limit tokens, pending revocations) is acknowledged only
 * once a majority of the replica set has it in its journal, so a failover or a SIGKILL of `mongod` loses none;
 * retryable writes and reads ride over a primary change; reads go to the primary. These options win over the
 * same ones in `MONGODB_URI` (the driver applies the options object last; the write concern is a `WriteConcern`
 * so that its `j` replaces the one `journal=false` or `fsync=false` in the URI makes, which a plain `{ journal }`
 * would not), and no collection or operation of the gateway sets its own. Fail fast while the database is
 * unreachable (503), and reconnect by itself when it is back.
 */
export const MONGO_OPTIONS = {
  writeConcern: new WriteConcern("majority", undefined, true),
  retryWrites: true,
  retryReads: true,
  readPreference: "primary",
  serverSelectionTimeoutMS: 2_000,
  connectTimeoutMS: 2_000,
  socketTimeoutMS: 10_000,
  appName: "rms-gateway",
} as const satisfies MongoClientOptions;

/** The gateway's MongoDB client (not connected yet: the driver connects on first use). */
export const gatewayMongoClient = (mongoUri: string) => new MongoClient(mongoUri, MONGO_OPTIONS);

/**
 * Connects to MongoDB in the background (the gateway starts even while the database is down; requests that need
 * it get 503 until it is back) and declares every index, both retried until the database answers: the connection
 * too, because the driver leaves a client whose first operation failed closed until it is connected again. Retention
 * is the TTL indexes' (rate-limit tokens, request logs): no sweep runs here.
 */
export function openStores(
  config: Pick<GatewayConfig, "mongoUri" | "mongoDatabase" | "rateLimitStore">,
  logger: Logger,
  overrides: { rateLimiter?: RateLimiter | undefined } = {},
): GatewayStores {
  const mongo = gatewayMongoClient(config.mongoUri);
  const db = mongo.db(config.mongoDatabase);
  const mongoLimiter = overrides.rateLimiter || config.rateLimitStore !== "mongodb" ? undefined : new MongoRateLimiter(db);
  const rateLimiter = overrides.rateLimiter ?? mongoLimiter ?? new MemoryRateLimiter();
  const revocations = new MongoPendingRevocationStore(db);
  const requestLogs = new RequestLogStore(db);
  // The streams' places follow the rate limits' store: shared across gateways exactly when the limits are.
  const mongoSlots = config.rateLimitStore === "mongodb" ? new MongoStreamSlots(db, logger) : undefined;
  const streamSlots = mongoSlots ?? new MemoryStreamSlots();
  const indexed: Indexed[] = [revocations, requestLogs, ...(mongoLimiter ? [mongoLimiter] : []), ...(mongoSlots ? [mongoSlots] : [])];

  let stopped = false;
  const indexes = async () => {
    for (let delay = 1_000; !stopped; delay = Math.min(delay * 2, 30_000)) {
      try {
        await mongo.connect();
        for (const store of indexed) await store.ensureIndexes();
        return;
      } catch (error) {
        logger.warn({ err: error instanceof Error ? error.message : String(error) }, "gateway indexes not created yet; retrying");
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
      }
    }
  };
  void indexes();

  return {
    requestLogs,
    rateLimiter,
    revocations,
    streamSlots,
    async close() {
      stopped = true;
      await rateLimiter.close();
      await streamSlots.close();
      await mongo.close();
    },
  };
}
