import type { Schemas } from "@rms/sdk";
import { formatTime } from "../lib/time";

type Bucket = Schemas["WebhookDeliveryBucket"];

const SERIES = [
  { key: "succeeded", label: "succeeded" },
  { key: "failed", label: "failed" },
  { key: "pending", label: "pending" },
] as const;

/** The chart's words for a screen reader and a tooltip: the totals of the period. */
export function chartSummary(buckets: readonly Bucket[]): string {
  const total = (key: (typeof SERIES)[number]["key"]) => buckets.reduce((n, b) => n + b[key], 0);
  return `Deliveries per hour, last ${buckets.length} hours: ${total("succeeded")} succeeded, ${total("failed")} failed, ${total("pending")} pending`;
}

/**
 * Deliveries per hour (succeeded, failed, pending) as stacked bars: SVG drawn here (a chart library would cost more
 * than the whole dashboard's own code), styled by the stylesheet (CSP: no inline style), each bar titled with its
 * hour and counts. `compact` is the table's small one; the full one has an axis of its first and last hour.
 */
export function DeliveryChart({ buckets, compact = false, label }: { buckets: readonly Bucket[]; compact?: boolean; label?: string }) {
  const width = buckets.length * 10;
  const height = compact ? 28 : 80;
  const highest = Math.max(1, ...buckets.map((b) => b.succeeded + b.failed + b.pending));
  const summary = label ?? chartSummary(buckets);
  return (
    <figure className={compact ? "chart chart-compact" : "chart"}>
      <svg viewBox={`0 0 ${width} ${height}`} preserveAspectRatio="none" role="img" aria-label={summary} focusable="false">
        <title>{summary}</title>
        <line className="chart-base" x1={0} y1={height - 0.5} x2={width} y2={height - 0.5} />
        {buckets.map((bucket, i) => {
          let y = height;
          return (
            <g key={bucket.start}>
              <title>{`${formatTime(bucket.start)}: ${bucket.succeeded} succeeded, ${bucket.failed} failed, ${bucket.pending} pending`}</title>
              {SERIES.map(({ key }) => {
                const h = (bucket[key] / highest) * (height - 2);
                if (h <= 0) return null;
                y -= h;
                return <rect key={key} className={`bar bar-${key}`} x={i * 10 + 1} y={y} width={8} height={Math.max(h, 1)} />;
              })}
            </g>
          );
        })}
      </svg>
      {!compact && (
        <figcaption className="chart-legend">
          <span>{buckets[0] ? formatTime(buckets[0].start) : ""}</span>
          <span className="legend">
            {SERIES.map(({ key, label: word }) => (
              <span key={key} className={`key key-${key}`}>
                {word}
              </span>
            ))}
          </span>
          <span>now</span>
        </figcaption>
      )}
    </figure>
  );
}
