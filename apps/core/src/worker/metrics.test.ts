// A worker's /metrics: the delivery and relay series move with real deliveries to loopback receivers over the
// real database, and the exposition is one Prometheus accepts (our linter, and promtool itself when installed).
import { randomBytes } from "node:crypto";
import { lintExposition } from "@rms/metrics-server";
import type {} from "@rms/test-db/vitest-setup";
import { eventually } from "@rms/test-db/testkit";
import { Registry } from "prom-client";
import { afterAll, describe, expect, inject, it } from "vitest";
import { newId } from "../ids.js";
import { RESOURCES_COLLECTION } from "../resources/store.js";
import { DEFAULT_SETTINGS } from "../settings.js";
import { newEvent } from "../storage/outbox.js";
import { EVENTS_COLLECTION } from "../storage/relay.js";
import { promtoolCheck, promtoolInstalled } from "@rms/test-db/testkit";
import { seriesValue } from "../testutil/exposition.js";
import { startWorkerProcess } from "../testutil/process.js";
import { startReceiver, type Receiver } from "../testutil/webhook-receiver.js";
import { insertEndpoint, testKeyring } from "../testutil/webhooks.js";
import { webhookFanOut, type RelayedEvent } from "../webhook-deliveries/fanout.js";
import { queueDepthGauges, QUEUE_SAMPLE_MS } from "../webhook-deliveries/metrics.js";
import { WEBHOOK_DELIVERIES_COLLECTION, type DeliveryDocument, type FannedOutEvent } from "../webhook-deliveries/model.js";
import { parseRetrySchedule } from "../webhooks/schedule.js";
import { masterKey } from "../webhooks/secret.js";
import { deliveryTask } from "./tasks/deliveries.js";
import { parseWorkerConfig } from "./config.js";
import { startWorker } from "./run.js";
import type { WorkerContext, WorkerTask } from "./tasks/task.js";
import { useTestDatabase } from "../testutil/database.js";

const { db, databaseName } = useTestDatabase("worker-metrics");
const receivers: Receiver[] = [];

async function receiver(status: number): Promise<Receiver> {
  const started = await startReceiver({ handler: (_req, res) => res.writeHead(status).end(String(status)) });
  receivers.push(started);
  return started;
}

const scrape = async (port: number | null) => {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
};

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

describe("a worker's /metrics", () => {
  it("counts what the worker's relay copied and queued, its claims, attempts by outcome, disables and give-ups", async () => {
    const keyring = testKeyring();
    const tenant = { account: newId("acct"), livemode: false };
    const [ok, gone, broken] = await Promise.all([receiver(200), receiver(410), receiver(500)]);
    // Subscribed to the resource's event only: the 410's `webhook_endpoint.disabled` is copied, and goes to none.
    for (const target of [ok, gone, broken]) await insertEndpoint(db, keyring, tenant, { url: target.url(), enabled_events: ["resource.created"] });

    // A task that writes as a task would: an event in a document's outbox, handed to the worker's own relay.
    let writer: WorkerContext | undefined;
    const writerTask: WorkerTask = {
      name: "writer",
      start(context) {
        writer = context;
        return { stop: async () => {} };
      },
    };
    const worker = await startWorker({
      mongoUri: inject("mongoUri"),
      databaseName,
      metricsPort: 0,
      // One retry 100 ms after the first failure: the 500 receiver's delivery gives up within the test.
      settings: { ...DEFAULT_SETTINGS, secretKeyring: keyring, webhookAllowPrivate: true, webhookRetrySchedule: parseRetrySchedule("100ms") },
      tasks: [deliveryTask({ pollMs: 50 }), writerTask],
    });
    try {
      const before = await scrape(worker.metricsPort);
      expect(seriesValue(before, 'webhook_delivery_attempts_total{outcome="succeeded"}')).toBeUndefined();
      expect(seriesValue(before, "relay_events_copied_total")).toBe(0);
      expect(seriesValue(before, "process_resident_memory_bytes")).toBeGreaterThan(0);

      const resourceId = newId("res");
      const event = newEvent("resource.created", tenant, { id: resourceId, name: "m" }, { requestId: null, idempotencyKey: null });
      await db.collection(RESOURCES_COLLECTION).insertOne({ _id: resourceId, ...tenant, pending_events: [event] } as never);
      writer!.written(RESOURCES_COLLECTION, resourceId);

      // Done once the 200 receiver has it, the 410 disabled its endpoint and the 500 has had its two attempts.
      const text = await eventually(async () => {
        const now = await scrape(worker.metricsPort);
        expect(seriesValue(now, 'webhook_deliveries_failed_total{reason="schedule_exhausted"}')).toBe(1);
        expect(seriesValue(now, 'webhook_deliveries_failed_total{reason="endpoint_disabled"}')).toBe(1);
        expect(seriesValue(now, "webhook_delivery_delay_seconds_count")).toBe(1);
        // The resource's event, and the disabled endpoint's own (its outbox, relayed by this worker's relay).
        expect(seriesValue(now, "relay_events_copied_total")).toBe(2);
        // Each claim is let go just after its last write.
        expect(seriesValue(now, "webhook_deliveries_in_flight")).toBe(0);
        return now;
      });
      expect(ok.deliveries).toHaveLength(1);
      expect(gone.deliveries).toHaveLength(1);
      expect(broken.deliveries).toHaveLength(2);
      expect(seriesValue(text, "webhook_deliveries_queued_total")).toBe(3);
      // A claim made before the relay copied the event finds it missing and is looked at again: at least 4.
      expect(seriesValue(text, "webhook_deliveries_claimed_total")).toBeGreaterThanOrEqual(4);
      expect(seriesValue(text, 'webhook_delivery_attempts_total{outcome="succeeded"}')).toBe(1);
      expect(seriesValue(text, 'webhook_delivery_attempts_total{outcome="http_error"}')).toBe(3);
      expect(seriesValue(text, 'webhook_delivery_attempt_duration_seconds_count{status="succeeded"}')).toBe(1);
      expect(seriesValue(text, 'webhook_delivery_attempt_duration_seconds_count{status="failed"}')).toBe(3);
      expect(seriesValue(text, 'webhook_endpoints_disabled_total{reason="gone"}')).toBe(1);
      // The claims are the driver's findAndModify commands, timed as core times its own.
      expect(seriesValue(text, 'mongodb_command_duration_seconds_count{command="findAndModify",outcome="ok"}')).toBeGreaterThanOrEqual(4);
      // The queue gauges are there (their figures are read at most every 10 s: tested below with a clock).
      expect(seriesValue(text, "webhook_deliveries_pending")).toBeDefined();
      expect(lintExposition(text)).toEqual([]);
    } finally {
      await worker.stop();
    }
  });

  it("a worker process serves it on WORKER_METRICS_PORT; the counters move with a real delivery; promtool accepts it", async () => {
    const target = await receiver(200);
    const keyBytes = randomBytes(32);
    const tenant = { account: newId("acct"), livemode: false };
    await insertEndpoint(db, { primary: masterKey(keyBytes) }, tenant, { url: target.url() });

    const worker = await startWorkerProcess(databaseName, { RMS_SECRET_KEY: keyBytes.toString("hex"), WEBHOOK_ALLOW_PRIVATE: "true" });
    try {
      expect(worker.metricsPort).toBeGreaterThan(0);
      const before = await scrape(worker.metricsPort);
      expect(seriesValue(before, 'webhook_delivery_attempts_total{outcome="succeeded"}')).toBeUndefined();

      const event = newEvent("resource.created", tenant, { id: newId("res"), name: "p" }, { requestId: null, idempotencyKey: null });
      const [prepared] = await webhookFanOut(db)([event as typeof event & RelayedEvent]);
      await db.collection<FannedOutEvent>(EVENTS_COLLECTION).insertOne(prepared as FannedOutEvent);

      const text = await eventually(async () => {
        const now = await scrape(worker.metricsPort);
        expect(seriesValue(now, 'webhook_delivery_attempts_total{outcome="succeeded"}')).toBe(1);
        // Counted once the delivery has left the queue, a moment after the attempt.
        expect(seriesValue(now, "webhook_delivery_delay_seconds_count")).toBe(1);
        return now;
      });
      expect(target.deliveries).toHaveLength(1);
      // Claimed once, or twice when the first claim came between the fan-out and the event's copy.
      expect(seriesValue(text, "webhook_deliveries_claimed_total")).toBeGreaterThanOrEqual(1);
      expect(lintExposition(text)).toEqual([]);
      if (promtoolInstalled()) expect(promtoolCheck(text)).toEqual({ status: 0, output: "" });
    } finally {
      expect(await worker.stop()).toBe(0);
    }
  });

  it.skipIf(!promtoolInstalled())("promtool check metrics accepts a worker's exposition (skipped where promtool is not installed)", async () => {
    const worker = await startWorker({ mongoUri: inject("mongoUri"), databaseName, metricsPort: 0, tasks: [deliveryTask({ pollMs: 50 })] });
    try {
      const result = promtoolCheck(await scrape(worker.metricsPort));
      expect(result.output).toBe("");
      expect(result.status).toBe(0);
    } finally {
      await worker.stop();
    }
  });
});

describe("the queue depth gauges", () => {
  it("read pending, due and the most overdue age at a scrape, at most every QUEUE_SAMPLE_MS", async () => {
    const deliveries = db.collection<DeliveryDocument>(`${WEBHOOK_DELIVERIES_COLLECTION}_gauges`);
    let nowMs = 1_000_000_000;
    const registry = new Registry();
    queueDepthGauges(registry, deliveries, () => nowMs);
    const pending = (id: string, dueAt: number) =>
      ({
        _id: id,
        status: "pending",
        due_at: dueAt,
        event: "evt_x",
        endpoint: "we_x",
        trigger: "scheduled",
        attempts: 0,
        first_failed_at: null,
        lease_owner: null,
        lease_until: null,
        epoch: 0,
        created: 0,
      }) as unknown as DeliveryDocument;
    await deliveries.insertMany([pending("d1", nowMs - 30_000), pending("d2", nowMs - 5_000), pending("d3", nowMs + 60_000)]);
    await deliveries.insertOne({ ...pending("d4", nowMs - 90_000), status: "failed" } as DeliveryDocument);

    const first = await registry.metrics();
    expect(seriesValue(first, "webhook_deliveries_pending")).toBe(3);
    expect(seriesValue(first, "webhook_deliveries_due")).toBe(2);
    expect(seriesValue(first, "webhook_deliveries_oldest_due_age_seconds")).toBe(30);

    // Within the interval a scrape answers the last figures without reading the queue.
    await deliveries.insertOne(pending("d5", nowMs - 60_000));
    nowMs += QUEUE_SAMPLE_MS - 1;
    expect(seriesValue(await registry.metrics(), "webhook_deliveries_pending")).toBe(3);
    nowMs += 1;
    const later = await registry.metrics();
    expect(seriesValue(later, "webhook_deliveries_pending")).toBe(4);
    expect(seriesValue(later, "webhook_deliveries_oldest_due_age_seconds")).toBe(70);
    expect(lintExposition(later)).toEqual([]);
  });

  it("answer zeros on an empty queue", async () => {
    const registry = new Registry();
    queueDepthGauges(registry, db.collection<DeliveryDocument>(`${WEBHOOK_DELIVERIES_COLLECTION}_empty`));
    const text = await registry.metrics();
    expect(seriesValue(text, "webhook_deliveries_pending")).toBe(0);
    expect(seriesValue(text, "webhook_deliveries_oldest_due_age_seconds")).toBe(0);
  });
});

it("WORKER_METRICS_PORT: 9466 by default, 0 for a free port, anything else not a port is refused", () => {
  const base = { MONGODB_URI: "mongodb://127.0.0.1:27017" };
  expect(parseWorkerConfig(base).metricsPort).toBe(9466);
  expect(parseWorkerConfig({ ...base, WORKER_METRICS_PORT: "0" }).metricsPort).toBe(0);
  expect(() => parseWorkerConfig({ ...base, WORKER_METRICS_PORT: "70000" })).toThrow("WORKER_METRICS_PORT must be a port number");
});
