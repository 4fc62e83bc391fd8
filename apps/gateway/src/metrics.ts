import type { RequestHandler } from "express";
import { collectProcessMetrics } from "@rms/metrics-server";
import { Counter, Gauge, Histogram, Registry } from "prom-client";

/** Seconds; from sub-millisecond (a cached reply) to the 30 s request timeout. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The gateway's Prometheus metrics: one registry per gateway (tests run several in one process). */
export interface GatewayMetrics {
  readonly registry: Registry;
  /** Connections closed at once because their client address had its most open (`MAX_CONNECTIONS_PER_ADDRESS`). */
  readonly connectionsRefused: Counter;
  /** Request logs dropped (the oldest first) because REQUEST_LOGS_BUFFER records were already waiting for the database. */
  readonly requestLogsDropped: Counter;
  /** Request logs written to the database. */
  readonly requestLogsWritten: Counter;
  /** Request logs the database refused, each dropped alone (the rest of its batch written). */
  readonly requestLogsRefused: Counter;
  /** Streams open now, by kind (`events`, `request_logs`). */
  readonly streamsOpen: Gauge<"stream">;
  /** Streams ended, by kind and why (`client`, `max_age`, `slow`, `shutdown`, `error`, `revoked`). */
  readonly streamsEnded: Counter<"stream" | "reason">;
  /** Reports the bytes written to streams and not yet taken by their clients (read at each scrape). */
  watchStreamBuffers(bytes: () => number): void;
  /** Reports how many request logs wait in memory for their batch (read at each scrape). */
  watchRequestLogsWaiting(count: () => number): void;
  /** Reports how many plain-HTTP revocations this gateway holds as pending (read at each scrape). */
  watchPendingRevocations(count: () => number): void;
  /** Counts and times every response by method, route pattern and status. */
  middleware(routeOf: (path: string) => string | undefined): RequestHandler;
}

export function gatewayMetrics(): GatewayMetrics {
  const registry = new Registry();
  collectProcessMetrics(registry);
  const labelNames = ["method", "route", "status"] as const;
  const requests = new Counter({
    name: "http_requests_total",
    help: "HTTP requests answered, by method, route pattern (never the raw path) and status.",
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from the request's arrival to the end of its response, by method, route pattern and status.",
    labelNames,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const connectionsRefused = new Counter({
    name: "gateway_connections_refused_total",
    help: "Connections closed as soon as they were accepted: their client address already had MAX_CONNECTIONS_PER_ADDRESS open.",
    registers: [registry],
  });
  const requestLogsDropped = new Counter({
    name: "gateway_request_logs_dropped_total",
    help: "Request logs dropped, oldest first, because REQUEST_LOGS_BUFFER of them already waited for the database (CONTRACT.md section 12).",
    registers: [registry],
  });
  const requestLogsWritten = new Counter({
    name: "gateway_request_logs_written_total",
    help: "Request logs written to the database (in batches, one insert per batch).",
    registers: [registry],
  });
  const requestLogsRefused = new Counter({
    name: "gateway_request_logs_refused_total",
    help: "Request logs the database refused (no retry would write them): each dropped alone, the rest of its batch written.",
    registers: [registry],
  });
  const streamsOpen = new Gauge({
    name: "gateway_streams_open",
    help: "Server-Sent Event streams open on this gateway, by kind (events, request_logs).",
    labelNames: ["stream"] as const,
    registers: [registry],
  });
  const streamsEnded = new Counter({
    name: "gateway_streams_ended_total",
    help:
      "Streams ended, by kind and reason: client (went away), max_age (the hour), slow (a reader that let too much wait: dropped), shutdown, " +
      "error, revoked (its key).",
    labelNames: ["stream", "reason"] as const,
    registers: [registry],
  });
  // Each method, route and status's two series, looked up once (prom-client hashes a label object on every call).
  const series = new Map<string, { count: ReturnType<typeof requests.labels>; duration: ReturnType<typeof duration.labels> }>();
  const seriesOf = (method: string, route: string, statusCode: number) => {
    const key = `${method} ${statusCode} ${route}`;
    let found = series.get(key);
    if (!found) {
      const status = String(statusCode);
      found = { count: requests.labels(method, route, status), duration: duration.labels(method, route, status) };
      series.set(key, found);
    }
    return found;
  };
  return {
    registry,
    connectionsRefused,
    requestLogsDropped,
    requestLogsWritten,
    requestLogsRefused,
    streamsOpen,
    streamsEnded,
    watchStreamBuffers(bytes) {
      new Gauge({
        name: "gateway_stream_buffered_bytes",
        help: "Bytes written to this gateway's streams and not yet taken by their clients (a stream past its bound is dropped).",
        registers: [registry],
        collect() {
          this.set(bytes());
        },
      });
    },
    watchRequestLogsWaiting(count) {
      new Gauge({
        name: "gateway_request_logs_waiting",
        help: "Request logs in this gateway's memory waiting for their batch to be written (at most REQUEST_LOGS_BUFFER).",
        registers: [registry],
        collect() {
          this.set(count());
        },
      });
    },
    watchPendingRevocations(count) {
      new Gauge({
        name: "gateway_pending_revocations",
        help: "Keys seen over plain HTTP whose revocation core has not taken yet, held in this gateway's memory (at most 10,000).",
        registers: [registry],
        collect() {
          this.set(count());
        },
      });
    },
    middleware(routeOf) {
      return (req, res, next) => {
        const started = process.hrtime.bigint();
        res.once("finish", () => {
          // Only known patterns and a few fixed words as labels: raw paths would let clients grow the series without bound.
          const route = routeOf(req.path) ?? "unmatched";
          const method = ["GET", "POST", "DELETE", "OPTIONS", "HEAD", "PUT", "PATCH"].includes(req.method) ? req.method : "OTHER";
          const series = seriesOf(method, route, res.statusCode);
          series.count.inc();
          series.duration.observe(Number(process.hrtime.bigint() - started) / 1e9);
        });
        next();
      };
    },
  };
}
