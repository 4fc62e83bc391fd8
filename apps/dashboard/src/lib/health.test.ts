import { describe, expect, it } from "vitest";
import { byHealth, type DeliveryStats, healthOf, nextAttemptText, rateText } from "./health";

const NOW = 1_800_000_000_000;
const stats = (fields: Partial<DeliveryStats>): DeliveryStats => ({
  object: "webhook_endpoint_delivery_stats",
  webhook_endpoint: "we_1",
  as_of: NOW / 1000,
  last_hour: { succeeded: 0, failed: 0, success_rate: null },
  last_day: { succeeded: 0, failed: 0, success_rate: null },
  failure_streak: 0,
  failing_since: null,
  last_failure: null,
  last_success_at: null,
  pending: 0,
  next_attempt_at: null,
  buckets: [],
  counted_from: null,
  ...fields,
});

describe("endpoint health", () => {
  it("rates in percent, none without attempts", () => {
    expect(rateText({ succeeded: 2, failed: 1, success_rate: 0.6667 })).toBe("66.7%");
    expect(rateText({ succeeded: 0, failed: 5, success_rate: 0 })).toBe("0%");
    expect(rateText({ succeeded: 0, failed: 0, success_rate: null })).toBe("—");
  });

  it("failing while the latest attempts failed, disabled before anything, then recovered, healthy, quiet; sorted so", () => {
    const failing = healthOf({ status: "enabled" }, stats({ failure_streak: 3, last_day: { succeeded: 0, failed: 3, success_rate: 0 } }));
    expect(failing).toMatchObject({ level: "failing", detail: "3 failed in a row" });
    expect(healthOf({ status: "disabled" }, stats({})).level).toBe("disabled");
    expect(healthOf({ status: "enabled" }, stats({ last_day: { succeeded: 5, failed: 1, success_rate: 0.83 } })).level).toBe("degraded");
    expect(healthOf({ status: "enabled" }, stats({ last_day: { succeeded: 5, failed: 0, success_rate: 1 } })).level).toBe("healthy");
    expect(healthOf({ status: "enabled" }, stats({})).level).toBe("idle");
    expect(byHealth([{ level: "healthy" as const }, { level: "idle" as const }, { level: "failing" as const }]).map((r) => r.level)).toEqual([
      "failing",
      "healthy",
      "idle",
    ]);
  });

  it("says when the next attempt comes", () => {
    expect(nextAttemptText(stats({}), NOW)).toBe("none pending");
    expect(nextAttemptText(stats({ next_attempt_at: NOW / 1000 - 60, pending: 12 }), NOW)).toBe("due now, 12 waiting for their turn");
    expect(nextAttemptText(stats({ next_attempt_at: NOW / 1000 + 240, pending: 1 }), NOW)).toBe("in 4 min (1 pending)");
  });
});
