import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { claimable } from "../storage/lease.js";
import { keysPerIndex, winningStages } from "@rms/test-db/testkit";
import { WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDocument } from "./model.js";
import { DUE_INDEX_NAME, DUE_SORT, dueFilter, ensureDeliveryIndexes } from "./queue.js";

let client: MongoClient;
let db: Db;
beforeAll(async () => {
  client = await new MongoClient(inject("mongoUri")).connect();
  db = client.db(testDatabaseName("webhooks-claim-index"));
});
afterAll(async () => {
  await db.dropDatabase();
  await client.close();
});

it("a delivery claim and the queue depth are answered from the partial index of pending deliveries, which leaves finished ones out", async () => {
  await ensureDeliveryIndexes(db);
  const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
  const statuses = ["pending", "failed", "failed", "succeeded"] as const;
  await deliveries.insertMany(Array.from({ length: 400 }, (_, i) => ({ _id: `d${i}`, status: statuses[i % 4]!, due_at: i, lease_until: null }) as unknown as DeliveryDocument));
  const now = 300;
  // The claim exactly as the worker's lease queue sends it (storage/lease.ts).
  const claim = winningStages(
    await deliveries
      .find(claimable(dueFilter(now), now))
      .sort(DUE_SORT)
      .limit(1)
      .explain("queryPlanner"),
  );
  expect(claim).toContain(`IXSCAN(${DUE_INDEX_NAME})`);
  expect(claim).not.toContain("COLLSCAN");
  expect(claim).not.toContain("SORT");
  // The queue depth's read (metrics.ts): covered by the index.
  const depth = winningStages(await deliveries.aggregate([{ $match: { status: "pending" } }, { $group: { _id: null, oldest: { $min: "$due_at" } } }]).explain("queryPlanner"));
  expect(depth).toContain(`IXSCAN(${DUE_INDEX_NAME})`);
  expect(depth).not.toContain("COLLSCAN");
  expect((await keysPerIndex(db, WEBHOOK_DELIVERIES_COLLECTION))[DUE_INDEX_NAME]).toBe(100);
});
