// The tracing rows (issue 23, item 5): the cost of OpenTelemetry tracing on the GET row. A second `rms start` on the
// same database (a database name of its own) runs with tracing on by the standard variables alone: every request
// sampled (the default parent-based always-on sampler), spans exported over OTLP/HTTP (protobuf, the default) to a
// local sink that answers 200. The same GET is measured on the first stack (tracing off) and on this one, in turn,
// with both stacks up during every run, so the ratio is tracing's cost alone.
import { getOnTwoStacks } from "./two-stacks.mjs";

export async function tracingRows({ results, ...context }) {
  const { startOtlpReceiver } = await import("@rms/telemetry/testkit");
  const sink = await startOtlpReceiver();
  try {
    // Off and on alternate, twice, and each keeps its better round: on a busy machine one run can lose a third of
    // its throughput to a neighbour, and that must not be read as tracing's cost.
    const rounds = await getOnTwoStacks({
      ...context,
      name: "traced",
      env: { MONGODB_DATABASE: "rms_bench_traced", OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint },
      order: ["first", "second", "first", "second"],
      labels: { first: "get_tracing_off", second: "get_tracing_on" },
    });
    const best = (runs) => runs.reduce((a, b) => (b.rps > a.rps ? b : a));
    results.get_tracing_off = best(rounds.first);
    results.get_tracing_on = { ...best(rounds.second), otlp_exports: sink.requests };
  } finally {
    await sink.close();
  }
  context.say(`tracing: GET ${Math.round(results.get_tracing_on.rps)} req/s traced vs ${Math.round(results.get_tracing_off.rps)} untraced`);
}
