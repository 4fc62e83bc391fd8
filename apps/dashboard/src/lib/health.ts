import type { Schemas } from "@rms/sdk";
import { relativeTime } from "./time";

export type DeliveryStats = Schemas["WebhookEndpointDeliveryStats"];
type Counts = Schemas["WebhookDeliveryCounts"];

/** A success rate as the pages write it: "95.2%", or "—" when no attempt was made. */
export function rateText(counts: Counts): string {
  if (counts.success_rate === null) return "—";
  const percent = counts.success_rate * 100;
  return `${percent === 100 || percent === 0 ? percent.toFixed(0) : percent.toFixed(1)}%`;
}

/** The counts behind a rate: "40 of 42 succeeded", or "no attempts". */
export function countsText(counts: Counts): string {
  const total = counts.succeeded + counts.failed;
  return total === 0 ? "no attempts" : `${counts.succeeded.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} succeeded`;
}

export type HealthLevel = "disabled" | "failing" | "degraded" | "healthy" | "idle";

/** How an endpoint is doing, in a word and a sentence: what the overview sorts and colours by. */
export function healthOf(endpoint: { status: string }, stats: DeliveryStats | undefined): { level: HealthLevel; label: string; detail: string } {
  if (endpoint.status === "disabled")
    return { level: "disabled", label: "disabled", detail: "Disabled: nothing is delivered to it until it is enabled again." };
  if (!stats) return { level: "idle", label: "…", detail: "" };
  if (stats.failure_streak > 0) {
    const streak = stats.failure_streak >= 1_000 ? "1,000+" : String(stats.failure_streak);
    return {
      level: "failing",
      label: "failing",
      detail: `${streak} failed in a row${stats.failing_since ? `, the first ${relativeTime(stats.failing_since)}` : ""}`,
    };
  }
  if (stats.last_day.failed > 0)
    return { level: "degraded", label: "recovered", detail: `The latest attempt succeeded; ${stats.last_day.failed} failed in 24 hours` };
  if (stats.last_day.succeeded === 0) return { level: "idle", label: "no traffic", detail: "No attempt in 24 hours" };
  return { level: "healthy", label: "healthy", detail: "Every attempt in 24 hours succeeded" };
}

const ORDER: Record<HealthLevel, number> = { failing: 0, disabled: 1, degraded: 2, healthy: 3, idle: 4 };

/** Failing endpoints first, then disabled, recovered, healthy, quiet; newest first within each. */
export function byHealth<T extends { level: HealthLevel }>(rows: readonly T[]): T[] {
  return [...rows].sort((a, b) => ORDER[a.level] - ORDER[b.level]);
}

/** When the endpoint's next attempt comes, in words: "none pending", "due now, 12 waiting", "in 4 min". */
export function nextAttemptText(stats: DeliveryStats, nowMs: number = Date.now()): string {
  if (stats.next_attempt_at === null) return "none pending";
  const waiting = stats.pending >= 1_000 ? "1,000+" : String(stats.pending);
  if (stats.next_attempt_at * 1000 <= nowMs) return `due now, ${waiting} waiting for their turn`;
  return `${relativeTime(stats.next_attempt_at, nowMs)} (${waiting} pending)`;
}
