import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import type { Db } from "mongodb";
import { describe, expect, it } from "vitest";
import { idAt, newId } from "../ids.js";
import { expectPage, usePlanCopies } from "../testutil/query-plans.js";
import { ensureDeliveryIndexes } from "../webhook-deliveries/queue.js";
import { WEBHOOK_ATTEMPTS_COLLECTION, WEBHOOK_DELIVERIES_COLLECTION, type AttemptDocument, type DeliveryDocument } from "../webhook-deliveries/model.js";
import { AttemptStore } from "./attempts.js";
import { deliveryStats, HOUR_MS, STATS_ATTEMPTS_MAX, STATS_PENDING_MAX, STREAK_MAX } from "./stats.js";

/**
 * The delivery statistics are index-served and bounded (docs/webhooks.md, "Delivery statistics"): over the
 * attempts of 10,000 endpoints, the measured endpoints' statistics read only their own
 * index ranges, the attempts' from the index alone (no document but the two point reads), and a flooded endpoint's at
 * most the bound of attempts and of pending deliveries. The time of each is printed beside a page of attempts: the same order.
 */

const NOW = Date.now();
const DAY = 86_400_000;
const ENDPOINTS = 10_000;
const tenant = { account: newId("acct", NOW - 90 * DAY), livemode: false };
const FLOODED = newId("we", NOW - 60 * DAY);
const QUIET = newId("we", NOW - 59 * DAY);
const FLOOD_ATTEMPTS = STATS_ATTEMPTS_MAX + 2_000;
const FLOOD_PENDING = STATS_PENDING_MAX * 3;

function attemptAt(endpoint: string, atMs: number, n: number, status: "succeeded" | "failed"): AttemptDocument {
  return {
    _id: idAt("wa", atMs, createHash("sha256").update(`${endpoint}:${n}`).digest()),
    account: tenant.account,
    livemode: false,
    event: idAt("evt", atMs, createHash("sha256").update(`e${n}`).digest()),
    endpoint,
    status,
    response_status: status === "succeeded" ? 200 : 500,
    response_body: status === "succeeded" ? null : "down",
    error: status === "succeeded" ? null : "http_error",
    duration_ms: 20,
    trigger: "scheduled",
    created: Math.floor(atMs / 1000),
    delivery: null,
    disable_endpoint: false,
    retry_after: null,
  };
}

function seed(): { attempts: AttemptDocument[]; deliveries: DeliveryDocument[] } {
  const attempts: AttemptDocument[] = [];
  // 10,000 other endpoints with three attempts each over the last 29 days, so every hour of the day holds some.
  for (let e = 0; e < ENDPOINTS; e++) {
    const endpoint = idAt("we", NOW - 80 * DAY + e, createHash("sha256").update(`we${e}`).digest());
    for (let i = 0; i < 3; i++) attempts.push(attemptAt(endpoint, NOW - ((e * 7919 + i * 9 * DAY) % (29 * DAY)), e * 3 + i, i === 1 ? "failed" : "succeeded"));
  }
  // The flooded endpoint: more attempts in the last day than one read counts, failing for the last 2,000.
  for (let i = 0; i < FLOOD_ATTEMPTS; i++) {
    attempts.push(attemptAt(FLOODED, NOW - Math.floor((i * 23 * HOUR_MS) / FLOOD_ATTEMPTS) - 1, 1_000_000 + i, i < 2_000 ? "failed" : "succeeded"));
  }
  // The quiet one: a few a day over the month.
  for (let i = 0; i < 90; i++) attempts.push(attemptAt(QUIET, NOW - i * 8 * HOUR_MS - 1, 2_000_000 + i, i % 4 === 0 ? "failed" : "succeeded"));
  const deliveries: DeliveryDocument[] = Array.from({ length: FLOOD_PENDING }, (_, i) => ({
    _id: `evt_flood${i}:${FLOODED}`,
    account: tenant.account,
    livemode: false,
    event: `evt_flood${i}`,
    endpoint: FLOODED,
    trigger: "scheduled",
    status: "pending",
    due_at: NOW - Math.floor((i * 20 * HOUR_MS) / FLOOD_PENDING),
    attempts: 1,
    first_failed_at: null,
    lease_owner: null,
    lease_until: null,
    epoch: 1,
    created: Math.floor((NOW - DAY) / 1000),
  }));
  return { attempts, deliveries };
}

const data = seed();

const { work, measure } = usePlanCopies("stats_plans", {
  async prepare(db: Db) {
    await ensureDeliveryIndexes(db);
    await db.collection(WEBHOOK_ATTEMPTS_COLLECTION).insertMany(data.attempts as never[]);
    await db.collection(WEBHOOK_DELIVERIES_COLLECTION).insertMany(data.deliveries as never[]);
  },
  report(table) {
    console.log(
      `\nDelivery statistics over ${data.attempts.length.toLocaleString("en-US")} attempts of ${ENDPOINTS.toLocaleString("en-US")} endpoints\n${table}\n`,
    );
  },
});

/** The fastest of five runs (ms): a noisy shared machine slows some. */
async function fastest(run: () => Promise<unknown>): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await run();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

describe("delivery statistics over 10,000 endpoints' attempts", () => {
  it("a quiet endpoint's read only its own keys, from the index alone", async () => {
    const { value, plans } = await measure("delivery stats (quiet endpoint)", () => deliveryStats(work, { _id: QUIET }, NOW));
    expect(value.lastDay.succeeded + value.lastDay.failed).toBeGreaterThan(0);
    for (const plan of plans) {
      expect(plan.stages, plan.shape).not.toContain("COLLSCAN");
      // Two point reads fetch one document each (the latest success, the latest failure); the rest is covered.
      expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(1);
      expect(plan.totalKeysExamined, plan.shape).toBeLessThanOrEqual(90 + 2);
    }
  });

  it("a flooded endpoint's stop at their bounds, and their time printed beside a page of attempts", async () => {
    const { value, plans } = await measure("delivery stats (flooded endpoint)", () => deliveryStats(work, { _id: FLOODED }, NOW));
    expect(value.attemptsCapped).toBe(true);
    expect(value.pendingCapped).toBe(true);
    expect(value.failureStreak).toBe(STREAK_MAX);
    expect(value.failureStreakCapped).toBe(true);
    for (const plan of plans) {
      expect(plan.stages, plan.shape).not.toContain("COLLSCAN");
      const pendingCount = plan.operation === `aggregate ${WEBHOOK_DELIVERIES_COLLECTION}`;
      // The attempts' reads are covered; the pending deliveries' are read from their documents, at most the bound.
      expect(plan.totalDocsExamined, plan.shape).toBeLessThanOrEqual(pendingCount ? STATS_PENDING_MAX : 1);
      expect(plan.totalKeysExamined, plan.shape).toBeLessThanOrEqual(Math.max(pendingCount ? STATS_PENDING_MAX : STATS_ATTEMPTS_MAX, STREAK_MAX) + 2);
    }
    const { plans: page } = await measure("attempts page (flooded endpoint)", () =>
      new AttemptStore(work).list({ account: tenant.account, livemode: false }, FLOODED, { limit: 20 }),
    );
    expectPage(page[0]!, 20);
    const statsMs = await fastest(() => deliveryStats(work, { _id: FLOODED }, NOW));
    const quietMs = await fastest(() => deliveryStats(work, { _id: QUIET }, NOW));
    const pageMs = await fastest(() => new AttemptStore(work).list({ account: tenant.account, livemode: false }, FLOODED, { limit: 100 }));
    console.log(
      `delivery stats: flooded endpoint ${statsMs.toFixed(1)} ms (bounded at ${STATS_ATTEMPTS_MAX} attempts, ${STATS_PENDING_MAX} pending, a streak of ` +
        `${STREAK_MAX}), quiet endpoint ${quietMs.toFixed(1)} ms; a page of 100 attempts ${pageMs.toFixed(1)} ms`,
    );
  });
});
