import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "../ids.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import { masterKey } from "../webhooks/index.js";
import {
  scheduledDeliveryId,
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  type AttemptDocument,
  type DeliveryDocument,
} from "../webhook-deliveries/model.js";

type Tenant = { accountId: string; livemode: boolean };

let t: TestCore;
beforeAll(async () => {
  t = await startTestCore({ settings: { secretKeyring: { primary: masterKey(Buffer.alloc(32, 4)) }, webhookAllowPrivate: true } });
});
afterAll(() => t.stop());

const endpoint = async (tenant: Tenant, enabledEvents: string[]) =>
  (await t.webhookEndpoints.createWebhookEndpoint({ tenant, url: "https://hooks.example.invalid/x", enabledEvents })).webhookEndpoint!.id;

function delivery(tenant: Tenant, event: string, endpointId: string, fields: Partial<DeliveryDocument>): DeliveryDocument {
  return {
    _id: scheduledDeliveryId(event, endpointId),
    account: tenant.accountId,
    livemode: tenant.livemode,
    event,
    endpoint: endpointId,
    trigger: "scheduled",
    status: "pending",
    due_at: Date.now(),
    attempts: 0,
    first_failed_at: null,
    lease_owner: null,
    lease_until: null,
    epoch: 0,
    created: Math.floor(Date.now() / 1000),
    ...fields,
  };
}

describe("ListEventDeliveries", () => {
  it(
    "says each endpoint's delivery: pending with its next attempt, failed with why, succeeded (its delivery gone or a later 2xx), none; and whether " +
      "it subscribes now",
    async () => {
      const { test: tenant } = await t.newAccount();
      const [retrying, gaveUp, delivered, resentOk, unsubscribed] = [
        await endpoint(tenant, ["*"]),
        await endpoint(tenant, ["resource.created"]),
        await endpoint(tenant, ["*"]),
        await endpoint(tenant, ["*"]),
        await endpoint(tenant, ["job.failed"]),
      ];
      const event = newId("evt");
      const dueAt = Date.now() + 300_000;
      // Still waiting for the first two (a 2xx pulls an endpoint out); the third's success deleted its delivery; the
      // fourth's delivery failed, then a resend got a 2xx.
      await t.db.collection(EVENTS_COLLECTION).insertOne({
        _id: event as never,
        account: tenant.accountId,
        livemode: false,
        type: "resource.created",
        created: Math.floor(Date.now() / 1000),
        pending_endpoints: [retrying, gaveUp],
      });
      await t.db
        .collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION)
        .insertMany([
          delivery(tenant, event, retrying, { status: "pending", attempts: 2, due_at: dueAt }),
          delivery(tenant, event, gaveUp, { status: "failed", attempts: 8, ended_reason: "schedule_exhausted" }),
          delivery(tenant, event, resentOk, { status: "failed", attempts: 8, ended_reason: "schedule_exhausted" }),
        ]);
      await t.db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION).insertOne({
        _id: newId("wa"),
        account: tenant.accountId,
        livemode: false,
        event,
        endpoint: delivered,
        status: "succeeded",
        response_status: 200,
        response_body: "ok",
        error: null,
        duration_ms: 3,
        trigger: "scheduled",
        created: Math.floor(Date.now() / 1000),
        delivery: null,
        disable_endpoint: false,
        retry_after: null,
      });

      const { deliveries, eventId } = await t.webhookEndpoints.listEventDeliveries({ tenant, eventId: event });
      expect(eventId).toBe(event);
      const of = (id: string) => deliveries.find((d) => d.webhookEndpointId === id);
      expect(deliveries).toHaveLength(5);
      expect(of(retrying)).toMatchObject({ status: "pending", attempts: 2, nextAttemptAt: BigInt(Math.floor(dueAt / 1000)), subscribed: true });
      expect(of(gaveUp)).toMatchObject({ status: "failed", attempts: 8, endedReason: "schedule_exhausted", subscribed: true });
      expect(of(gaveUp)?.nextAttemptAt).toBeUndefined();
      expect(of(delivered)).toMatchObject({ status: "succeeded", subscribed: true });
      expect(of(resentOk)).toMatchObject({ status: "succeeded" });
      expect(of(unsubscribed)).toMatchObject({ status: "none", attempts: 0, subscribed: false });
    },
  );

  it("an event of another account or mode is not found", async () => {
    const a = await t.newAccount();
    const b = await t.newAccount();
    const event = newId("evt");
    await t.db.collection(EVENTS_COLLECTION).insertOne({ _id: event as never, account: a.id, livemode: false, type: "resource.created", created: 1 });
    await expect(t.webhookEndpoints.listEventDeliveries({ tenant: b.test, eventId: event })).rejects.toMatchObject({ code: "resource_missing", param: "id" });
    await expect(t.webhookEndpoints.listEventDeliveries({ tenant: a.live, eventId: event })).rejects.toMatchObject({ code: "resource_missing" });
    await expect(t.webhookEndpoints.listEventDeliveries({ tenant: a.test, eventId: "nope" })).rejects.toMatchObject({ code: "resource_missing" });
  });
});
