import { eventually } from "@rms/test-db/testkit";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { eventRelay } from "./event-relay.js";
import { newEvent } from "./storage/outbox.js";
import { EVENTS_COLLECTION } from "./storage/relay.js";
import { newTenant, thing, thingsCollection } from "./testutil/storage.js";
import { insertEndpoint, testKeyring } from "./testutil/webhooks.js";
import { DELIVERY_QUEUE, WEBHOOK_DELIVERIES_COLLECTION } from "./webhook-deliveries/model.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
beforeAll(async () => {
  t = await thingsCollection();
});
afterAll(() => t.close());

it(
  "wakes the delivery workers once the deliveries are queued, before the events' copy (which a worker's claim overlaps), and counts each event with " +
    "an endpoint",
  async () => {
    // A copy that cannot land (the events collection refuses every document): the wake-up must have gone out already.
    await t.db.createCollection(EVENTS_COLLECTION, { validator: { $jsonSchema: { required: ["never_present"] } }, validationAction: "error" });
    const tenant = newTenant();
    await insertEndpoint(t.db, testKeyring(), tenant, { url: "https://hooks.example.com/in", enabled_events: ["*"] });
    const docs = [thing(tenant), thing(tenant)];
    await t.things.insertMany(
      docs.map((doc) => ({
        ...doc,
        pending_events: [newEvent("thing.created", tenant, { id: doc._id, n: 0, color: "red" }, { requestId: null, idempotencyKey: null })],
      })),
    );
    const before = await DELIVERY_QUEUE.read(t.db);

    const relay = eventRelay(t.db, pino({ level: "silent" }), undefined, ["things"]);
    await expect(
      relay.relayDocuments(
        "things",
        docs.map((d) => d._id),
      ),
    ).rejects.toThrow();

    expect(await t.db.collection(WEBHOOK_DELIVERIES_COLLECTION).countDocuments({ endpoint: { $exists: true } })).toBe(2);
    expect(await t.db.collection(EVENTS_COLLECTION).countDocuments()).toBe(0);
    await eventually(async () => expect(await DELIVERY_QUEUE.read(t.db)).toBe(before + 2));
  },
);
