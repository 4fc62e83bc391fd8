// The tracing rows (issue 23, item 5): the cost of OpenTelemetry tracing on the GET row. A second `rms start` on the
// same database (a database name of its own) runs with tracing on by the standard variables alone: every request
// sampled (the default parent-based always-on sampler), spans exported over OTLP/HTTP (protobuf, the default) to a
// local sink that answers 200. The same GET is measured on the first stack (tracing off) and on this one, in turn,
// with both stacks up during every run, so the ratio is tracing's cost alone.
import { readFileSync } from "node:fs";
import { httpsJson, runner } from "./load.mjs";
import { startStack } from "./stack.mjs";

export async function tracingRows({ results, stack, root, work, ports, own, connections, duration, warmup, ca, headers, resourceId, say }) {
  const { startOtlpReceiver } = await import("@rms/telemetry/testkit");
  const sink = await startOtlpReceiver();
  const traced = await startStack({
    root,
    work,
    ports,
    own,
    say,
    name: "traced",
    mongoUri: stack.mongoUri,
    env: { MONGODB_DATABASE: "rms_bench_traced", OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint },
  });
  try {
    const tracedCa = readFileSync(traced.certFile);
    const tracedUrl = `https://127.0.0.1:${ports.httpsPort}`;
    const tracedHeaders = { authorization: `Bearer ${traced.key}` };
    const created = await httpsJson(
      "POST",
      `${tracedUrl}/v1/resources`,
      tracedCa,
      { ...tracedHeaders, "content-type": "application/json" },
      JSON.stringify({ name: "bench", metadata: { plan: "pro" } }),
    );
    // Off and on alternate, twice, and each keeps its better round: on a busy machine one run can lose a third of
    // its throughput to a neighbour, and that must not be read as tracing's cost.
    const rounds = {};
    const off = await runner({ results: rounds, connections, duration, warmup, ca, say });
    const on = await runner({ results: rounds, connections, duration, warmup, ca: tracedCa, say });
    for (const round of [1, 2]) {
      await off.http(`get_tracing_off_${round}`, `https://127.0.0.1:${stack.httpsPort}/v1/resources/${resourceId}`, { headers }, stack.pids());
      await on.http(`get_tracing_on_${round}`, `${tracedUrl}/v1/resources/${created.id}`, { headers: tracedHeaders }, traced.pids());
    }
    const best = (name) => [rounds[`${name}_1`], rounds[`${name}_2`]].reduce((a, b) => (b.rps > a.rps ? b : a));
    results.get_tracing_off = best("get_tracing_off");
    results.get_tracing_on = { ...best("get_tracing_on"), otlp_exports: sink.requests };
  } finally {
    traced.admin.close();
    traced.coreResources.close();
    await stopStack(traced.process);
    await sink.close();
  }
  say(`tracing: GET ${Math.round(results.get_tracing_on.rps)} req/s traced vs ${Math.round(results.get_tracing_off.rps)} untraced`);
}

async function stopStack(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  await new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve();
    }, 15_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
