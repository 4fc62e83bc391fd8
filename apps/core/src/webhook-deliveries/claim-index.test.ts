import { expect, it } from "vitest";
import { claimable } from "../storage/lease.js";
import { keysPerIndex, winningStages } from "@rms/test-db/testkit";
import { ENDPOINT_DUE_INDEX_NAME, TURN_INDEX_NAME, TURN_SORT, turnFilter, WEBHOOK_LANES_COLLECTION, type LaneDocument } from "./lanes.js";
import { WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDocument } from "./model.js";
import { DUE_INDEX_NAME, DUE_SORT, endpointDueFilter, ensureDeliveryIndexes } from "./queue.js";
import { useTestDatabase } from "../testutil/database.js";

const { db } = useTestDatabase("webhooks-claim-index");

it(
  "a claim reads the lane whose turn came first and then that endpoint's next due delivery, each from a partial index that leaves idle lanes and " +
    "finished deliveries out; the queue depth from pending_due",
  async () => {
    await ensureDeliveryIndexes(db);
    const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
    const statuses = ["pending", "failed", "failed", "succeeded"] as const;
    await deliveries.insertMany(
      Array.from(
        { length: 400 },
        (_, i) => ({ _id: `d${i}`, endpoint: `we_${i % 8}`, status: statuses[i % 4]!, due_at: i, lease_until: null }) as unknown as DeliveryDocument,
      ),
    );
    const lanes = db.collection<LaneDocument>(WEBHOOK_LANES_COLLECTION);
    // 8 lanes with a turn, 92 idle ones.
    await lanes.insertMany(
      Array.from({ length: 100 }, (_, i) => ({
        _id: `we_${i}`,
        account: "acct",
        livemode: false,
        turn_at: i < 8 ? i : null,
        flights: [],
        failures: 0,
        hold_until: 0,
        version: 1,
      })),
    );
    const now = 300;
    // The lane claim as DeliveryQueue sends it (lanes.ts, Lanes.take).
    const lane = winningStages(await lanes.find(turnFilter(now)).sort(TURN_SORT).limit(1).explain("queryPlanner"));
    expect(lane).toContain(`IXSCAN(${TURN_INDEX_NAME})`);
    expect(lane).not.toContain("SORT");
    expect((await keysPerIndex(db, WEBHOOK_LANES_COLLECTION))[TURN_INDEX_NAME]).toBe(8);
    // The claim inside the lane, exactly as the worker's lease queue sends it (storage/lease.ts).
    const claim = winningStages(
      await deliveries
        .find(claimable(endpointDueFilter("we_3", now), now))
        .sort(DUE_SORT)
        .limit(1)
        .explain("queryPlanner"),
    );
    expect(claim).toContain(`IXSCAN(${ENDPOINT_DUE_INDEX_NAME})`);
    expect(claim).not.toContain("COLLSCAN");
    expect(claim).not.toContain("SORT");
    // The queue depth's read (metrics.ts): covered by the index.
    const depth = winningStages(
      await deliveries.aggregate([{ $match: { status: "pending" } }, { $group: { _id: null, oldest: { $min: "$due_at" } } }]).explain("queryPlanner"),
    );
    expect(depth).toContain(`IXSCAN(${DUE_INDEX_NAME})`);
    expect(depth).not.toContain("COLLSCAN");
    const keys = await keysPerIndex(db, WEBHOOK_DELIVERIES_COLLECTION);
    expect(keys[DUE_INDEX_NAME]).toBe(100);
    expect(keys[ENDPOINT_DUE_INDEX_NAME]).toBe(100);
  },
);
