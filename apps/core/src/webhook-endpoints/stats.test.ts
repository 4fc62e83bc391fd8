import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { idAt } from "../ids.js";
import { startTestCore, type TestCore } from "../testutil/harness.js";
import { masterKey } from "../webhooks/index.js";
import {
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  WEBHOOK_ENDPOINTS_COLLECTION,
  type AttemptDocument,
  type DeliveryDocument,
} from "../webhook-deliveries/model.js";
import { deliveryStats, HOUR_MS, hourStarts, STATS_ATTEMPTS_MAX } from "./stats.js";

type Tenant = { accountId: string; livemode: boolean };

const keyring = { primary: masterKey(Buffer.alloc(32, 5)) };
let t: TestCore;
beforeAll(async () => {
  t = await startTestCore({ settings: { secretKeyring: keyring, webhookAllowPrivate: true } });
});
afterAll(() => t.stop());

const MIN = 60_000;

async function endpointOf(tenant: Tenant) {
  return (await t.webhookEndpoints.createWebhookEndpoint({ tenant, url: "https://hooks.example.invalid/x", enabledEvents: ["*"] })).webhookEndpoint!;
}

/** An attempt of `endpoint` whose id and time are `atMs`. */
function attempt(tenant: Tenant, endpoint: string, atMs: number, status: "succeeded" | "failed", n: number): AttemptDocument {
  return {
    _id: idAt("wa", atMs, createHash("sha256").update(`${endpoint}:${n}`).digest()),
    account: tenant.accountId,
    livemode: tenant.livemode,
    event: idAt("evt", atMs, createHash("sha256").update(`evt:${n}`).digest()),
    endpoint,
    status,
    response_status: status === "succeeded" ? 200 : 503,
    response_body: status === "succeeded" ? "ok" : `{"error":"down ${n}"}`,
    error: status === "succeeded" ? null : "http_error",
    duration_ms: 10,
    trigger: "scheduled",
    created: Math.floor(atMs / 1000),
    delivery: null,
    disable_endpoint: false,
    retry_after: null,
  };
}

function pending(tenant: Tenant, endpoint: string, dueMs: number, n: number): DeliveryDocument {
  return {
    _id: `evt_x${n}:${endpoint}`,
    account: tenant.accountId,
    livemode: tenant.livemode,
    event: `evt_x${n}`,
    endpoint,
    trigger: "scheduled",
    status: "pending",
    due_at: dueMs,
    attempts: 1,
    first_failed_at: null,
    lease_owner: null,
    lease_until: null,
    epoch: 1,
    created: Math.floor(dueMs / 1000),
  };
}

describe("delivery statistics", () => {
  it(
    "counts the last hour and day by outcome, the streak since the latest " + "success, the latest failure, the pending deliveries and the next one due",
    async () => {
      const { test: tenant } = await t.newAccount();
      const we = await endpointOf(tenant);
      const other = await endpointOf(tenant);
      const now = Date.now();
      const docs: AttemptDocument[] = [
        // Two days ago: outside the day.
        attempt(tenant, we.id, now - 48 * HOUR_MS, "failed", 1),
        // Five hours ago: two successes, one failure.
        attempt(tenant, we.id, now - 5 * HOUR_MS, "succeeded", 2),
        attempt(tenant, we.id, now - 5 * HOUR_MS + MIN, "failed", 3),
        attempt(tenant, we.id, now - 5 * HOUR_MS + 2 * MIN, "succeeded", 4),
        // The last hour: three failures in a row after the latest success.
        attempt(tenant, we.id, now - 50 * MIN, "failed", 5),
        attempt(tenant, we.id, now - 20 * MIN, "failed", 6),
        attempt(tenant, we.id, now - MIN, "failed", 7),
        // Another endpoint's, which count nowhere here.
        attempt(tenant, other.id, now - MIN, "succeeded", 8),
      ];
      await t.db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION).insertMany(docs);
      await t.db
        .collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION)
        .insertMany([pending(tenant, we.id, now - 3 * HOUR_MS, 1), pending(tenant, we.id, now + 5 * MIN, 2), pending(tenant, other.id, now - 30 * HOUR_MS, 3)]);
      await t.db.collection<{ _id: string }>(WEBHOOK_ENDPOINTS_COLLECTION).updateOne({ _id: we.id }, { $set: { failing_since: now - 50 * MIN } });

      const {
        lastHour,
        lastDay,
        failureStreak,
        lastFailure,
        pending: waiting,
        nextAttemptAt,
        buckets,
        failingSince,
        lastSuccessAt,
      } = await t.webhookEndpoints.getWebhookEndpointDeliveryStats({ tenant, id: we.id });
      expect(lastHour).toMatchObject({ succeeded: 0, failed: 3 });
      expect(lastDay).toMatchObject({ succeeded: 2, failed: 4 });
      expect(failureStreak).toBe(3);
      expect(Number(failingSince)).toBe(Math.floor((now - 50 * MIN) / 1000));
      expect(Number(lastSuccessAt)).toBe(docs[3]!.created);
      expect(lastFailure).toMatchObject({ id: docs[6]!._id, responseStatus: 503, responseBody: '{"error":"down 7"}', failureCode: "http_error" });
      expect(waiting).toBe(2);
      expect(Number(nextAttemptAt)).toBe(Math.floor((now - 3 * HOUR_MS) / 1000));
      // 24 hours, oldest first; each attempt in the hour its time falls in, each pending delivery in the hour it fell due
      // (the current hour for one due later).
      expect(buckets).toHaveLength(24);
      const hourOf = (ms: number) => buckets.findIndex((b) => Number(b.start) * 1000 <= ms && ms < Number(b.start) * 1000 + HOUR_MS);
      expect(buckets[hourOf(now - 5 * HOUR_MS + MIN)]!.failed).toBeGreaterThanOrEqual(1);
      expect(buckets.reduce((n, b) => n + b.succeeded, 0)).toBe(2);
      expect(buckets.reduce((n, b) => n + b.failed, 0)).toBe(4);
      expect(buckets[hourOf(now - 3 * HOUR_MS)]!.pending).toBe(1);
      expect(buckets[23]!.pending).toBe(1);
    },
  );

  it("an endpoint with no attempt: zeros, no streak, no failure, nothing due", async () => {
    const { test: tenant } = await t.newAccount();
    const we = await endpointOf(tenant);
    const stats = await t.webhookEndpoints.getWebhookEndpointDeliveryStats({ tenant, id: we.id });
    expect(stats).toMatchObject({ failureStreak: 0, pending: 0, attemptsCapped: false });
    expect(stats.lastFailure).toBeUndefined();
    expect(stats.nextAttemptAt).toBeUndefined();
    expect(stats.failingSince).toBeUndefined();
    expect(stats.lastDay).toMatchObject({ succeeded: 0, failed: 0 });
  });

  it("another account's or mode's endpoint is not found", async () => {
    const a = await t.newAccount();
    const b = await t.newAccount();
    const we = await endpointOf(a.test);
    await expect(t.webhookEndpoints.getWebhookEndpointDeliveryStats({ tenant: b.test, id: we.id })).rejects.toMatchObject({ code: "resource_missing" });
    await expect(t.webhookEndpoints.getWebhookEndpointDeliveryStats({ tenant: a.live, id: we.id })).rejects.toMatchObject({ code: "resource_missing" });
  });

  it("a day of more attempts than one read counts: the newest are counted, and the answer says from when", async () => {
    const { test: tenant } = await t.newAccount();
    const we = await endpointOf(tenant);
    const now = Date.now();
    const n = STATS_ATTEMPTS_MAX + 500;
    // Spread over the last 20 hours, newest every few seconds.
    const docs = Array.from({ length: n }, (_, i) =>
      attempt(tenant, we.id, now - Math.floor((i * 20 * HOUR_MS) / n) - 1, i % 2 === 0 ? "succeeded" : "failed", i),
    );
    await t.db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION).insertMany(docs);
    const stats = await deliveryStats(t.db, { _id: we.id }, now);
    expect(stats.attemptsCapped).toBe(true);
    expect(stats.lastDay.succeeded + stats.lastDay.failed).toBe(STATS_ATTEMPTS_MAX);
    const starts = hourStarts(now);
    expect(stats.countedFrom).toBeGreaterThan(starts[0]! / 1000);
  });
});
