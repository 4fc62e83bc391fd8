import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { usesSecondaryIndexes } from "@rms/db-engine";
import { ensureSecondaryIndexes } from "./db-engine.js";
import { IDEMPOTENCY_COLLECTION, MongoIdempotencyStore } from "./idempotency/index.js";
import { MongoRateLimiter, RATE_LIMIT_COLLECTION } from "./ratelimit/mongo.js";

let mongo: MongoClient;
beforeAll(() => {
  mongo = new MongoClient(inject("mongoUri"));
});
afterAll(() => mongo.close());

it("the gateway declares its non-unique indexes only on engines that use them", async () => {
  const db = mongo.db(testDatabaseName("gateway_indexes"));
  const limiter = new MongoRateLimiter(db);
  const secondary = inject("mongoEngine") !== "mongo-java-server";
  try {
    expect(await usesSecondaryIndexes(db)).toBe(secondary);
    expect(await ensureSecondaryIndexes(db, [new MongoIdempotencyStore(db), limiter])).toBe(secondary);
    // A collection without declared indexes may not exist yet: it then has none to list.
    const names = async (collection: string) =>
      (
        await db
          .collection(collection)
          .indexes()
          .catch(() => [])
      )
        .map((index) => index.name)
        .sort();
    expect(await names(IDEMPOTENCY_COLLECTION)).toEqual(secondary ? ["_id_", "created"] : []);
    expect(await names(RATE_LIMIT_COLLECTION)).toEqual(secondary ? ["_id_", "bucket_window", "window"] : []);
  } finally {
    await limiter.close();
    await db.dropDatabase();
  }
});
