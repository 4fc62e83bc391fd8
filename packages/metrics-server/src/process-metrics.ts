import { collectDefaultMetrics, type Registry } from "prom-client";

/**
 * prom-client's gauges of active handles, requests and resources end in `_total`, which
 * Prometheus reserves for counters (`promtool check metrics` rejects them). The same numbers
 * stay available, by type, as `nodejs_active_handles`, `nodejs_active_requests` and `nodejs_active_resources`.
 */
const MISNAMED_GAUGES = ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"];

/** The standard process and Node.js metrics, minus the misnamed gauges. */
export function collectProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_GAUGES) registry.removeSingleMetric(name);
}
