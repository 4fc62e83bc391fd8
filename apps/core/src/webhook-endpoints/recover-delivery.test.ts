import { eventually } from "@rms/test-db/testkit";
import { pino } from "pino";
import { Registry } from "prom-client";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_SETTINGS, type CoreSettings } from "../settings.js";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import { startReceiver, type Receiver } from "../testutil/webhook-receiver.js";
import { masterKey } from "../webhooks/index.js";
import { WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDocument } from "../webhook-deliveries/model.js";
import { deliveriesPoller } from "../worker/tasks/deliveries.js";

const settings: CoreSettings = {
  ...DEFAULT_SETTINGS,
  secretKeyring: { primary: masterKey(Buffer.alloc(32, 5)) },
  webhookAllowPrivate: true,
  // One retry soon after the first attempt: the scheduled delivery gives up within the test.
  webhookRetrySchedule: [20],
  // A small cap (the contract's is 10,000, tested at that size in recover.test.ts).
  webhookRecoverMax: 5,
};
let t: TestCore;
let receiver: Receiver;
let worker: ReturnType<typeof deliveriesPoller>;
let answer = 500;
beforeAll(async () => {
  t = await startTestCore({ relay: true, settings });
  receiver = await startReceiver({ handler: (_req, res) => res.writeHead(answer).end(String(answer)) });
  worker = deliveriesPoller(
    { db: t.db, logger: pino({ level: "silent" }), workerId: "recover-test", written: () => {}, settings, metrics: new Registry() },
    { pollMs: 50 },
  );
  worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
  await t?.stop();
});

it("an event whose scheduled delivery failed for good is delivered by a recovery, which the attempts list shows", async () => {
  const { test: tenant } = await t.newAccount();
  const { webhookEndpoint: we } = await t.webhookEndpoints.createWebhookEndpoint({ tenant, url: receiver.url(), enabledEvents: ["resource.created"] });
  const { resource } = await t.resources.createResource({ tenant, name: "missed" });
  const deliveries = t.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
  // The worker tries twice (the schedule has one retry), then ends the delivery.
  const failed = await eventually(async () => {
    const found = await deliveries.findOne({ endpoint: we!.id, status: "failed" });
    expect(found).toMatchObject({ trigger: "scheduled", attempts: 2 });
    return found!;
  });

  answer = 200;
  const since = BigInt(Math.floor(Date.now() / 1000) - 600);
  expect(await t.webhookEndpoints.recoverWebhookEndpoint({ tenant, id: we!.id, since })).toMatchObject({ scheduled: 1, hasMore: false });
  const recovered = await eventually(async () => {
    const { webhookAttempts } = await t.webhookEndpoints.listWebhookAttempts({ tenant, webhookEndpointId: we!.id, status: "succeeded" });
    expect(webhookAttempts).toHaveLength(1);
    return webhookAttempts[0]!;
  });
  expect(recovered).toMatchObject({ eventId: failed.event, trigger: "recovery", responseStatus: 200 });
  const all = await t.webhookEndpoints.listWebhookAttempts({ tenant, webhookEndpointId: we!.id });
  expect(all.webhookAttempts.map((a) => [a.trigger, a.status])).toEqual([
    ["recovery", "succeeded"],
    ["scheduled", "failed"],
    ["scheduled", "failed"],
  ]);
  const last = receiver.deliveries.at(-1)!;
  const payload = new Webhook(we!.secret!).verify(last.body, last.headers as Record<string, string>) as { id: string; data: { object: { id: string } } };
  expect(payload).toMatchObject({ id: failed.event, data: { object: { id: resource!.id } } });
  expect((await t.events.getEvent({ tenant, id: failed.event })).event?.pendingWebhooks).toBe(0);
  // Delivered now: nothing is left to recover.
  expect((await t.webhookEndpoints.recoverWebhookEndpoint({ tenant, id: we!.id, since })).scheduled).toBe(0);
});

it(
  "a recover over more events than its cap says has_more and schedules the rest on the next call; its deliveries are paced like any other of the " +
    "endpoint (at most 4 in flight)",
  async () => {
    const { test: tenant } = await t.newAccount();
    let inFlight = 0;
    let most = 0;
    let up = false;
    const slow = await startReceiver({
      handler: (_req, res) => {
        if (!up) return void res.writeHead(500).end();
        inFlight++;
        most = Math.max(most, inFlight);
        setTimeout(() => {
          inFlight--;
          res.end("ok");
        }, 150);
      },
    });
    try {
      const { webhookEndpoint: we } = await t.webhookEndpoints.createWebhookEndpoint({ tenant, url: slow.url(), enabledEvents: ["resource.created"] });
      const count = 12;
      for (let i = 0; i < count; i++) await t.resources.createResource({ tenant, name: `missed-${i}` });
      const deliveries = t.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
      await eventually(async () => expect(await deliveries.countDocuments({ endpoint: we!.id, status: "failed" })).toBe(count), { timeoutMs: 30_000 });

      up = true;
      const since = BigInt(Math.floor(Date.now() / 1000) - 600);
      const calls = [];
      for (;;) {
        const answer = await t.webhookEndpoints.recoverWebhookEndpoint({ tenant, id: we!.id, since });
        calls.push({ scheduled: answer.scheduled, hasMore: answer.hasMore });
        if (!answer.hasMore) break;
      }
      expect(calls.slice(0, 2)).toEqual([
        { scheduled: 5, hasMore: true },
        { scheduled: 5, hasMore: true },
      ]);
      expect(calls.reduce((n, c) => n + c.scheduled, 0)).toBe(count);
      await eventually(
        async () =>
          expect(
            (await t.webhookEndpoints.listWebhookAttempts({ tenant, webhookEndpointId: we!.id, status: "succeeded", limit: 100 })).webhookAttempts,
          ).toHaveLength(count),
        {
          timeoutMs: 30_000,
        },
      );
      // The worker has 128 slots; the endpoint's lane lets 4 of them at it.
      console.log(`recover of ${count} events with a cap of 5: calls ${JSON.stringify(calls)}; at most ${most} deliveries in flight at the receiver`);
      expect(most).toBeLessThanOrEqual(4);
    } finally {
      await slow.close();
    }
  },
);
