import {
  Counter,
  Gauge,
  Histogram,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
  type Metric,
  type Registry,
} from "prom-client";

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
