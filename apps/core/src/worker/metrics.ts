import { collectProcessMetrics } from "@rms/metrics-server";
import { Counter, Gauge, Histogram, Registry, type CounterConfiguration, type GaugeConfiguration, type HistogramConfiguration, type Metric } from "prom-client";

/** A worker process's registry: the standard process metrics; its tasks add their own (WorkerContext.metrics). */
export function workerRegistry(): Registry {
  const registry = new Registry();
  collectProcessMetrics(registry);
  return registry;
}

/**
 * The metric of that name in the registry, made on first use: two instances of one task in a process
 * (tests, or a task listed twice) count into the same series instead of failing on a duplicate name.
 */
function registered<M extends Metric>(registry: Registry, name: string, make: () => M): M {
  return (registry.getSingleMetric(name) as M | undefined) ?? make();
}

export function counterIn<L extends string>(registry: Registry, config: Omit<CounterConfiguration<L>, "registers">): Counter<L> {
  return registered(registry, config.name, () => new Counter({ ...config, registers: [registry] }));
}

export function histogramIn<L extends string>(registry: Registry, config: Omit<HistogramConfiguration<L>, "registers">): Histogram<L> {
  return registered(registry, config.name, () => new Histogram({ ...config, registers: [registry] }));
}

export function gaugeIn<L extends string>(registry: Registry, config: Omit<GaugeConfiguration<L>, "registers">): Gauge<L> {
  return registered(registry, config.name, () => new Gauge({ ...config, registers: [registry] }));
}
