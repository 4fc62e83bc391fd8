// The tracing rows (issue 23, item 5; issue 48): the cost of OpenTelemetry tracing on the GET row. A second `rms start`
// on the same database (a database name of its own) runs with tracing on by the standard variables alone, spans
// exported over OTLP/HTTP (protobuf, the default) to a local sink that answers 200: first with every request sampled
// (`parentbased_always_on`, the default outside production), then with the production default's ratio
// (`parentbased_traceidratio` at PRODUCTION_SAMPLE_RATIO: nine requests in ten sampled out). The same GET is measured
// on the first stack (tracing off) and on the traced one in turn, with both stacks up during every run, so each
// ratio is tracing's cost alone; the CPU per request of gateway and core is the steadier figure on a shared machine.
import { getOnTwoStacks } from "./two-stacks.mjs";

export async function tracingRows({ results, ...context }) {
  const { startOtlpReceiver } = await import("@rms/telemetry/testkit");
  const { PRODUCTION_SAMPLE_RATIO } = await import("@rms/telemetry");
  const sink = await startOtlpReceiver();
  const best = (runs) => runs.reduce((a, b) => (b.rps > a.rps ? b : a));
  try {
    const sides = [
      { name: "traced", label: "get_tracing_on", off: "get_tracing_off", env: { OTEL_TRACES_SAMPLER: "parentbased_always_on" } },
      {
        name: "sampled",
        label: "get_tracing_ratio",
        off: "get_tracing_off_ratio",
        env: { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: String(PRODUCTION_SAMPLE_RATIO) },
      },
    ];
    for (const side of sides) {
      const exportsBefore = sink.requests;
      // Off and on alternate, twice, and each keeps its better round: on a busy machine one run can lose a third of
      // its throughput to a neighbour, and that must not be read as tracing's cost.
      const rounds = await getOnTwoStacks({
        ...context,
        name: side.name,
        env: { MONGODB_DATABASE: `rms_bench_${side.name}`, OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint, ...side.env },
        order: ["first", "second", "first", "second"],
        labels: { first: side.off, second: side.label },
      });
      results[side.off] = best(rounds.first);
      results[side.label] = { ...best(rounds.second), otlp_exports: sink.requests - exportsBefore, sampler: side.env };
      context.say(`tracing (${side.name}): GET ${Math.round(results[side.label].rps)} req/s traced vs ${Math.round(results[side.off].rps)} untraced`);
    }
  } finally {
    await sink.close();
  }
}
