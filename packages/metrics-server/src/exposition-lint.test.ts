import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { lintExposition } from "./exposition-lint.js";
import { collectProcessMetrics } from "./process-metrics.js";

describe("lintExposition", () => {
  it("passes a clean registry with every metric type and escaped label values", async () => {
    const registry = new Registry();
    new Counter({ name: "jobs_done_total", help: "Jobs done.", labelNames: ["queue"], registers: [registry] }).inc({ queue: 'a "quoted"\\ value\n' });
    new Gauge({ name: "queue_depth", help: "Depth.", registers: [registry] }).set(3);
    new Histogram({ name: "job_duration_seconds", help: "Duration.", labelNames: ["queue"], buckets: [0.1, 1], registers: [registry] }).observe(
      { queue: "a" },
      0.5,
    );
    expect(lintExposition(await registry.metrics())).toEqual([]);
  });

  it("finds what promtool rejects: _total on a gauge, a counter without it, no help, non-base units, bad lines", () => {
    const text = [
      "# HELP nodejs_active_handles_total Handles.",
      "# TYPE nodejs_active_handles_total gauge",
      "nodejs_active_handles_total 4",
      "# HELP requests Requests.",
      "# TYPE requests counter",
      "requests 1",
      "# TYPE latency_milliseconds gauge",
      "latency_milliseconds 1",
      "broken{a=1} 2",
      "# HELP x X.",
      "# TYPE x gauge",
      'x{a="1"} 1',
      'x{a="1"} 2',
    ].join("\n");
    expect(lintExposition(text)).toEqual([
      "line 9: label a: value must be quoted",
      'line 13: duplicate series x{a="1"}',
      'nodejs_active_handles_total: non-counter metrics should not have "_total" suffix',
      'requests: counter metrics should have "_total" suffix',
      "latency_milliseconds: no help text",
      'latency_milliseconds: use base unit "seconds" instead of "milliseconds"',
    ]);
  });

  it("finds a histogram without its +Inf bucket", () => {
    const text = ["# HELP h H.", "# TYPE h histogram", 'h_bucket{le="1"} 1', "h_sum 1", "h_count 1"].join("\n");
    expect(lintExposition(text)).toEqual(["h: series {} has no +Inf bucket"]);
  });

  it("finds a family split in two", () => {
    const text = ["# HELP h H.", "# TYPE h gauge", "h 1", "# HELP g G.", "# TYPE g gauge", "g 1", 'h{a="b"} 1'].join("\n");
    expect(lintExposition(text)).toEqual(["line 7: h appears again after other metrics (families must be contiguous)"]);
  });

  it("accepts NaN and infinities as Go parses them, and refuses other words", () => {
    const text = ["# HELP g G.", "# TYPE g gauge", 'g{a="1"} Nan', 'g{a="2"} +Inf', 'g{a="3"} -inf', 'g{a="4"} 1e-3', 'g{a="5"} lots'].join("\n");
    expect(lintExposition(text)).toEqual(['line 7: bad value "lots"']);
  });
});

describe("collectProcessMetrics", () => {
  it("keeps the standard process metrics and leaves none that promtool rejects", async () => {
    const registry = new Registry();
    collectProcessMetrics(registry);
    const text = await registry.metrics();
    expect(text).toContain("process_resident_memory_bytes");
    expect(text).toContain("nodejs_active_handles");
    expect(text).not.toMatch(/nodejs_active_\w+_total/);
    expect(lintExposition(text)).toEqual([]);
  });
});
