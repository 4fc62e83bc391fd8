import { collectProcessMetrics } from "@rms/metrics-server";
import { Registry } from "prom-client";

/** A worker process's registry: the standard process metrics; its tasks add their own (WorkerContext.metrics, with metrics-registry.ts). */
export function workerRegistry(): Registry {
  const registry = new Registry();
  collectProcessMetrics(registry);
  return registry;
}
