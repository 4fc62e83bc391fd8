import { afterAll, beforeAll, expect, it } from "vitest";
import type { Tenant } from "../caller.js";
import { EventStore } from "../events/store.js";
import { idAt } from "../ids.js";
import { DEFAULT_WEBHOOK_RECOVER_MAX } from "../settings.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { newTenant, thingsCollection } from "../testutil/storage.js";
import { WEBHOOK_LANES_COLLECTION, type LaneDocument } from "../webhook-deliveries/lanes.js";
import { scheduledDeliveryId, WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDocument, type FannedOutEvent } from "../webhook-deliveries/model.js";
import { ensureDeliveryIndexes } from "../webhook-deliveries/queue.js";
import { RECOVER_EXAMINED_MAX, RECOVER_PAGE, scheduleRecovery } from "./recover.js";

/**
 * The `recover` cap at its default (CONTRACT.md section 7: at most 10,000 events per call, `has_more`, call
 * again for the rest), over more failed events than that, written straight into the collections.
 */

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
  await new EventStore(t.db).ensureIndexes();
  await ensureDeliveryIndexes(t.db);
});
afterAll(() => t?.close());

/**
 * `count` events of `tenant` from `startMs` (1 ms apart, in id order), each still waiting for `endpoint` after its
 * delivery to it failed for good; answers their ids.
 */
async function failedEvents(tenant: Tenant, endpoint: string, count: number, startMs: number): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => idAt("evt", startMs + i, Buffer.from(`${endpoint}:${i}`.padStart(32, "0"))));
  const created = Math.floor(startMs / 1000);
  for (let from = 0; from < count; from += 5_000) {
    const slice = ids.slice(from, from + 5_000);
    await t.db
      .collection<FannedOutEvent>(EVENTS_COLLECTION)
      .insertMany(
        slice.map(
          (id) => ({ _id: id, ...tenant, type: "resource.created", created, pending_endpoints: [endpoint], undelivered: true }) as unknown as FannedOutEvent,
        ),
      );
    await t.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION).insertMany(
      slice.map((id) => ({
        _id: scheduledDeliveryId(id, endpoint),
        ...tenant,
        event: id,
        endpoint,
        trigger: "scheduled" as const,
        status: "failed" as const,
        due_at: startMs,
        attempts: 8,
        first_failed_at: startMs,
        lease_owner: null,
        lease_until: null,
        epoch: 8,
        created,
        ended_reason: "schedule_exhausted",
      })),
    );
  }
  return ids;
}

it(`schedules the oldest ${DEFAULT_WEBHOOK_RECOVER_MAX.toLocaleString("en")} failed events and says has_more; the next call schedules the rest; then ` +
  `nothing is left`, {
  timeout: 180_000,
}, async () => {
  const tenant = newTenant();
  const endpoint = "we_recover_cap";
  const total = DEFAULT_WEBHOOK_RECOVER_MAX + 50;
  const startMs = Date.now() - 86_400_000;
  const ids = await failedEvents(tenant, endpoint, total, startMs);
  const since = Math.floor(startMs / 1000) - 1;
  const recoveries = () =>
    t.db
      .collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION)
      .find({ endpoint, trigger: "recovery" }, { projection: { event: 1 } })
      .toArray();

  expect(await scheduleRecovery(t.db, tenant, endpoint, since)).toEqual({ scheduled: DEFAULT_WEBHOOK_RECOVER_MAX, hasMore: true });
  const first = (await recoveries()).map((d) => d.event).sort();
  expect(first).toEqual(ids.slice(0, DEFAULT_WEBHOOK_RECOVER_MAX));
  // Its deliveries wait in the endpoint's lane like any other.
  expect(await t.db.collection<LaneDocument>(WEBHOOK_LANES_COLLECTION).findOne({ _id: endpoint })).toMatchObject({
    account: tenant.account,
    turn_at: expect.any(Number),
  });

  // The first ones are pending now: the next call walks past them to the rest.
  expect(await scheduleRecovery(t.db, tenant, endpoint, since)).toEqual({ scheduled: total - DEFAULT_WEBHOOK_RECOVER_MAX, hasMore: false });
  expect((await recoveries()).map((d) => d.event).sort()).toEqual(ids);
  expect(await scheduleRecovery(t.db, tenant, endpoint, since)).toEqual({ scheduled: 0, hasMore: false });
});

it("a cap that falls on a page's end still says whether more are left", async () => {
  const tenant = newTenant();
  const endpoint = "we_recover_edge";
  const startMs = Date.now() - 3_600_000;
  await failedEvents(tenant, endpoint, RECOVER_PAGE + 1, startMs);
  const since = Math.floor(startMs / 1000) - 1;
  expect(await scheduleRecovery(t.db, tenant, endpoint, since, { max: RECOVER_PAGE })).toEqual({ scheduled: RECOVER_PAGE, hasMore: true });
  expect(await scheduleRecovery(t.db, tenant, endpoint, since, { max: RECOVER_PAGE })).toEqual({ scheduled: 1, hasMore: false });
});

// Issue 31, item 3: the walk past events whose delivery is still pending stops at a stated bound
// (RECOVER_EXAMINED_MAX waiting events per call), instead of reading every waiting event of the endpoint.
it("stops its walk after examinedMax waiting events, with has_more, even when none of them could be scheduled", async () => {
  const tenant = newTenant();
  const endpoint = "we_recover_walk";
  const startMs = Date.now() - 7_200_000;
  const ids = await failedEvents(tenant, endpoint, 1_200, startMs);
  // The first 1,100 still have a delivery pending (nothing to recover); the last 100 failed for good.
  await t.db
    .collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION)
    .updateMany({ endpoint, event: { $in: ids.slice(0, 1_100) } }, { $set: { status: "pending" }, $unset: { ended_reason: "" } });
  const since = Math.floor(startMs / 1000) - 1;
  expect(await scheduleRecovery(t.db, tenant, endpoint, since, { examinedMax: 1_000 })).toEqual({ scheduled: 0, hasMore: true });
  expect(RECOVER_EXAMINED_MAX).toBe(20_000);
  // Under the default bound the same call walks past them all and schedules the last 100.
  expect(await scheduleRecovery(t.db, tenant, endpoint, since)).toEqual({ scheduled: 100, hasMore: false });
});
