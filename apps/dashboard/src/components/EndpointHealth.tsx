import type { WebhookEndpoint } from "../api/client";
import { unwrap } from "../api/client";
import { useAuth } from "../app/auth";
import { byHealth, countsText, type DeliveryStats, healthOf, nextAttemptText, rateText } from "../lib/health";
import { useLiveQueries, useLiveQuery } from "../lib/live";
import { type Column, DataTable } from "./DataTable";
import { DeliveryChart } from "./DeliveryChart";
import { ErrorNotice } from "./ErrorNotice";
import { IdLink } from "./IdLink";
import { JsonView } from "./JsonView";
import { StatusCode, Time } from "./ui";

const statsKey = (id: string) => ["endpoint-stats", id] as const;

interface Row {
  readonly id: string;
  readonly endpoint: WebhookEndpoint;
  readonly stats: DeliveryStats | undefined;
  readonly level: ReturnType<typeof healthOf>["level"];
  readonly health: ReturnType<typeof healthOf>;
}

/** A health word as a badge: its class says its colour. */
export function HealthBadge({ health }: { health: ReturnType<typeof healthOf> }) {
  return <span className={`badge health-${health.level}`}>{health.label}</span>;
}

function LastError({ stats }: { stats: DeliveryStats | undefined }) {
  const failure = stats?.last_failure;
  if (!failure) return <span className="muted">none in 30 days</span>;
  return (
    <span>
      <StatusCode status={failure.response_status} /> <code>{failure.failure_code}</code>{" "}
      <span className="nowrap">
        <Time seconds={failure.created} />
      </span>{" "}
      <IdLink id={failure.event} />
    </span>
  );
}

const COLUMNS: readonly Column<Row>[] = [
  {
    header: "Endpoint",
    cell: (r) => (
      <>
        <IdLink id={r.id} /> <span className="url">{r.endpoint.url}</span>
      </>
    ),
    className: "text",
  },
  {
    header: "Health",
    cell: (r) => (
      <>
        <HealthBadge health={r.health} /> <span className="help">{r.health.detail}</span>
      </>
    ),
    className: "text",
  },
  { header: "Last hour", cell: (r) => (r.stats ? <Rate counts={r.stats.last_hour} /> : "…") },
  { header: "Last day", cell: (r) => (r.stats ? <Rate counts={r.stats.last_day} /> : "…") },
  { header: "Last error", cell: (r) => <LastError stats={r.stats} />, className: "text" },
  { header: "Next attempt", cell: (r) => (r.stats ? nextAttemptText(r.stats) : "…"), className: "text" },
  { header: "Last 24 hours", cell: (r) => (r.stats ? <DeliveryChart buckets={r.stats.buckets} compact /> : "…") },
];

function Rate({ counts }: { counts: DeliveryStats["last_hour"] }) {
  return (
    <span className="rate">
      <strong>{rateText(counts)}</strong> <span className="help">{countsText(counts)}</span>
    </span>
  );
}

/**
 * Every endpoint's delivery health, failing ones first: the success rate over the last hour and day, the failure
 * streak, the last error, the next attempt, and a chart of the day (each endpoint's `delivery_stats`, live).
 */
export function EndpointHealthTable({ endpoints, caption }: { endpoints: readonly WebhookEndpoint[]; caption: string }) {
  const { client } = useAuth();
  const stats = useLiveQueries<DeliveryStats>(
    "endpoint-health",
    endpoints.map((e) => ({ queryKey: statsKey(e.id), queryFn: () => unwrap(client.webhookEndpoints.deliveryStats(e.id)) })),
  );
  const rows = byHealth(
    endpoints.map((endpoint, i) => {
      const health = healthOf(endpoint, stats[i]?.data);
      return { id: endpoint.id, endpoint, stats: stats[i]?.data, level: health.level, health };
    }),
  );
  return (
    <>
      <ErrorNotice error={stats.find((s) => s.error)?.error ?? null} />
      <DataTable caption={caption} columns={COLUMNS} rows={rows} rowClass={(r) => `row-${r.level}`} />
    </>
  );
}

/** One endpoint's health, for its own page: the rates, the streak, the next attempt, the day's chart, the latest failure open. */
export function EndpointHealthSummary({ endpoint }: { endpoint: WebhookEndpoint }) {
  const { client } = useAuth();
  const stats = useLiveQuery("endpoint-health", { queryKey: statsKey(endpoint.id), queryFn: () => unwrap(client.webhookEndpoints.deliveryStats(endpoint.id)) });
  const data = stats.data;
  const health = healthOf(endpoint, data);
  return (
    <div className="health">
      <ErrorNotice error={stats.error} />
      {data && (
        <>
          <dl className="details details-wide">
            <dt>Health</dt>
            <dd>
              <HealthBadge health={health} /> {health.detail}
            </dd>
            <dt>Last hour</dt>
            <dd>
              <Rate counts={data.last_hour} />
            </dd>
            <dt>Last 24 hours</dt>
            <dd>
              <Rate counts={data.last_day} />
              {data.counted_from !== null && (
                <span className="help">
                  {" "}
                  (the newest 5,000 attempts, from <Time seconds={data.counted_from} />)
                </span>
              )}
            </dd>
            <dt>Next attempt</dt>
            <dd>{nextAttemptText(data)}</dd>
            <dt>Last success</dt>
            <dd>{data.last_success_at === null ? "none in 30 days" : <Time seconds={data.last_success_at} />}</dd>
          </dl>
          <DeliveryChart buckets={data.buckets} />
          {data.last_failure && (
            <div className="last-failure">
              <h3>
                Latest failure: <StatusCode status={data.last_failure.response_status} /> <code>{data.last_failure.failure_code}</code>,{" "}
                <Time seconds={data.last_failure.created} />, event <IdLink id={data.last_failure.event} />
              </h3>
              {data.last_failure.response_body !== null && data.last_failure.response_body !== "" ? (
                <JsonView text={data.last_failure.response_body} label={`Response body of ${data.last_failure.id}`} />
              ) : (
                <p className="help">No response body.</p>
              )}
            </div>
          )}
        </>
      )}
    </div>
  );
}
