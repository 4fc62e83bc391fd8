import { WebhookEndpointStatus } from "@rms/proto";
import { eventually } from "@rms/test-db/testkit";
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DEFAULT_SETTINGS, type CoreSettings } from "../settings.js";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import { startReceiver, type Receiver } from "../testutil/webhook-receiver.js";
import { masterKey } from "../webhooks/index.js";
import { deliveriesPoller } from "../worker/tasks/deliveries.js";

// Issue 31, item 3 (CONTRACT.md section 7, resend): a resend takes a place in the endpoint's lane like any
// delivery and a worker makes it, so resends to an endpoint that never answers hold at most the endpoint's
// in-flight limit of connections (4), none of them in core, and each call still answers within its deadline:
// the attempt as made, or as scheduled (`status: "pending"`), listed under the endpoint's attempts once made.
// (Before, core made each attempt inline: ten resends held ten connections and each call its whole 15 s.)

const settings: CoreSettings = { ...DEFAULT_SETTINGS, secretKeyring: { primary: masterKey(Buffer.alloc(32, 7)) }, webhookAllowPrivate: true };
let t: TestCore;
let receiver: Receiver;
let worker: ReturnType<typeof deliveriesPoller>;
let stalling = true;
beforeAll(async () => {
  t = await startTestCore({ relay: true, settings });
  receiver = await startReceiver({ handler: (_req, res) => (stalling ? undefined : void res.end("ok")) });
  worker = deliveriesPoller(
    { db: t.db, logger: pino({ level: "silent" }), workerId: "resend-lane", written: () => {}, settings, metrics: new Registry() },
    // A stalled attempt ends after 2 s here (15 s in production).
    { pollMs: 50, transport: { timeoutMs: 2_000 } },
  );
  worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
  await t?.stop();
});

it("ten resends to an endpoint that never answers: 4 connections at most, every call answered within its deadline, every attempt made later", async () => {
  const { test: tenant } = await t.newAccount();
  const { webhookEndpoint: we } = await t.webhookEndpoints.createWebhookEndpoint({ tenant, url: receiver.url(), enabledEvents: ["job.failed"] });
  const { resource } = await t.resources.createResource({ tenant, name: "resent" });
  const event = await eventually(async () => {
    const { events } = await t.events.listEvents({ tenant, limit: 10 });
    const found = events.find((e) => e.dataJson.includes(resource!.id));
    expect(found).toBeDefined();
    return found!;
  });
  // Subscribed once its event is fanned out: resends must be of a subscribed type, and no scheduled delivery comes.
  await t.webhookEndpoints.updateWebhookEndpoint({ tenant, id: we!.id, enabledEvents: { types: ["resource.created"] } });

  // Each call with a 4 s deadline: inline, every one would wait for its attempt's 15 s timeout and fail.
  const answers = await Promise.all(
    Array.from({ length: 10 }, () => t.webhookEndpoints.resendEvent({ tenant, eventId: event.id, webhookEndpointId: we!.id }, { timeoutMs: 4_000 })),
  );
  const attempts = answers.map((a) => a.webhookAttempt!);
  // Each call answers within its deadline: the attempt as scheduled, or, for the ones the lane let through first, as
  // made (the stalled receiver timed out after the test's 2 s transport limit, inside the call's 4 s).
  for (const attempt of attempts) {
    expect(attempt).toMatchObject({ eventId: event.id, webhookEndpointId: we!.id, trigger: "manual" });
    if (attempt.status !== "pending") expect(attempt).toMatchObject({ status: "failed", failureCode: "timeout" });
  }
  expect(attempts.filter((a) => a.status !== "pending").length).toBeLessThanOrEqual(settings.webhookEndpointConcurrency);
  expect(new Set(attempts.map((a) => a.id)).size).toBe(10);
  // The lane's limit: 4 in flight (WEBHOOK_ENDPOINT_CONCURRENCY), however many resends wait.
  expect(receiver.connections - receiver.closedConnections).toBeLessThanOrEqual(settings.webhookEndpointConcurrency);
  // (Connections opened in all may pass 4: an attempt that timed out frees its place for the next one.)

  // The receiver recovers: every scheduled attempt is made and listed, under the id the call answered.
  stalling = false;
  const listed = await eventually(
    async () => {
      const { webhookAttempts } = await t.webhookEndpoints.listWebhookAttempts({ tenant, webhookEndpointId: we!.id, limit: 100 });
      expect(webhookAttempts).toHaveLength(10);
      return webhookAttempts;
    },
    { timeoutMs: 30_000 },
  );
  expect(listed.map((a) => a.id).sort()).toEqual(attempts.map((a) => a.id).sort());
  expect(listed.some((a) => a.status === "succeeded")).toBe(true);
}, 60_000);

it("a resend to a disabled endpoint is made too (a way to test it before enabling it again), and answers the attempt", async () => {
  stalling = false;
  const { test: tenant } = await t.newAccount();
  const { webhookEndpoint: we } = await t.webhookEndpoints.createWebhookEndpoint({ tenant, url: receiver.url("/disabled"), enabledEvents: ["*"] });
  const { resource } = await t.resources.createResource({ tenant, name: "to a disabled one" });
  const event = await eventually(async () => {
    const { events } = await t.events.listEvents({ tenant, limit: 10 });
    const found = events.find((e) => e.dataJson.includes(resource!.id));
    expect(found).toBeDefined();
    return found!;
  });
  await t.webhookEndpoints.updateWebhookEndpoint({ tenant, id: we!.id, status: WebhookEndpointStatus.DISABLED });
  const { webhookAttempt } = await t.webhookEndpoints.resendEvent({ tenant, eventId: event.id, webhookEndpointId: we!.id }, { timeoutMs: 10_000 });
  expect(webhookAttempt).toMatchObject({ status: "succeeded", responseStatus: 200, trigger: "manual" });
  expect((await t.webhookEndpoints.getWebhookEndpoint({ tenant, id: we!.id })).webhookEndpoint?.status).toBe(WebhookEndpointStatus.DISABLED);
});
