// The report of `npm run bench`: the checks (each a ratio against its baseline, with its target), the jobs rows,
// every run's figures; printed as Markdown and written to bench/results/latest.{json,md} and the results
// section of docs/performance.md.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import { peakRss } from "./load.mjs";

const ratio = (x, y) => (y ? x / y : NaN);
/** CPU ms per request of the gateway and core together, two decimals. */
const serviceCpu = (r) => ((r.cpu_ms_per_request?.gateway ?? NaN) + (r.cpu_ms_per_request?.core ?? NaN)).toFixed(2);

/** The checks: each run against what it is compared with. */
function checks(results, depth, updates, updateWindow) {
  return [
    {
      check: "GET /v1/resources/:id (full stack) vs B",
      rps: ratio(results.get.rps, results.baseline_b.rps),
      p99: ratio(results.get.p99, results.baseline_b.p99),
      target: "≥ 0.70 req/s, p99 ≤ 2×",
      ok: ratio(results.get.rps, results.baseline_b.rps) >= 0.7 && ratio(results.get.p99, results.baseline_b.p99) <= 2,
      a: results.get,
      b: results.baseline_b,
    },
    {
      // CPU per request says more than req/s on a shared machine: gateway + core, traced and not.
      check: `GET /v1/resources/:id with tracing on (every request sampled, spans exported over OTLP/HTTP to a local sink) vs the same GET with tracing off, both stacks up; gateway + core CPU per request ${serviceCpu(results.get_tracing_on)} ms vs ${serviceCpu(results.get_tracing_off)} ms`,
      rps: ratio(results.get_tracing_on.rps, results.get_tracing_off.rps),
      p99: ratio(results.get_tracing_on.p99, results.get_tracing_off.p99),
      target: "(context)",
      ok: null,
      a: results.get_tracing_on,
      b: results.get_tracing_off,
    },
    {
      check: "POST /v1/resources + Idempotency-Key vs B",
      rps: ratio(results.post.rps, results.baseline_b.rps),
      p99: ratio(results.post.p99, results.baseline_b.p99),
      target: "≥ 0.35 req/s",
      ok: ratio(results.post.rps, results.baseline_b.rps) >= 0.35,
      a: results.post,
      b: results.baseline_b,
    },
    {
      check: `list page ${depth.toLocaleString("en")} deep vs page 1 (time)`,
      rps: ratio(results.list_page1.rps, results.list_deep.rps),
      p99: ratio(results.list_deep.p99, results.list_page1.p99),
      target: "≤ 1.2× time",
      ok: ratio(results.list_page1.rps, results.list_deep.rps) <= 1.2,
      a: results.list_deep,
      b: results.list_page1,
    },
    {
      check: `GET /v1/resources?limit=20 (account of ${(depth + 100).toLocaleString("en")}) vs B`,
      rps: ratio(results.list.rps, results.baseline_b.rps),
      p99: ratio(results.list.p99, results.baseline_b.p99),
      target: "≥ 0.35 req/s",
      ok: ratio(results.list.rps, results.baseline_b.rps) >= 0.35,
      a: results.list,
      b: results.baseline_b,
    },
    {
      check: `update of one resource: last ${updateWindow} of ${updates.toLocaleString("en")} vs first ${updateWindow} (time)`,
      rps: ratio(results.update_first.rps, results.update_last.rps),
      p99: ratio(results.update_last.p99, results.update_first.p99),
      target: "≤ 1.2× time",
      ok: ratio(results.update_first.rps, results.update_last.rps) <= 1.2,
      a: results.update_last,
      b: results.update_first,
    },
    {
      check: "GET /v1/resources/:id with a webhook endpoint (relay + fan-out + a worker delivering) vs the same GET just before",
      rps: ratio(results.get_webhooks.rps, results.get_again.rps),
      p99: ratio(results.get_webhooks.p99, results.get_again.p99),
      target: "≥ 0.90 req/s",
      ok: ratio(results.get_webhooks.rps, results.get_again.rps) >= 0.9,
      a: results.get_webhooks,
      b: results.get_again,
    },
    {
      check: "POST /v1/resources with a webhook endpoint (each create fanned out and delivered) vs the same POST just before (endpoint disabled)",
      rps: ratio(results.post_webhooks.rps, results.post_again.rps),
      p99: ratio(results.post_webhooks.p99, results.post_again.p99),
      target: "≥ 0.90 req/s",
      ok: ratio(results.post_webhooks.rps, results.post_again.rps) >= 0.9,
      a: results.post_webhooks,
      b: results.post_again,
    },
    ...[
      ["create_to_delivery", "half"],
      ["create_to_delivery_quarter", "a quarter of"],
    ].map(([name, share]) => ({
      check: `committed create (its 201) -> its delivery at a local receiver, ${Math.round(results[name].rps)} creates/s (${share} the deliveries/s of 1 endpoint), ${results[name].total} deliveries, vs B's latency`,
      rps: NaN,
      p99: ratio(results[name].p99, results.baseline_b.p99),
      target: "(context)",
      ok: null,
      a: results[name],
      b: results.baseline_b,
    })),
    {
      check: `create (its 201) -> delivery p99 of a well-behaved account, ${Math.round(results.calm_create_to_delivery_noisy.rps)} creates/s, while another account's 16 dead endpoints (never answering) hold a backlog, vs the same with no dead endpoints`,
      rps: NaN,
      p99: ratio(results.calm_create_to_delivery_noisy.p99, results.calm_create_to_delivery.p99),
      target: "p99 ≤ 1.5×",
      ok: ratio(results.calm_create_to_delivery_noisy.p99, results.calm_create_to_delivery.p99) <= 1.5,
      a: results.calm_create_to_delivery_noisy,
      b: results.calm_create_to_delivery,
    },
    {
      check: "deliveries/s, 1 endpoint vs B",
      rps: ratio(results.deliveries_1.rps, results.baseline_b.rps),
      p99: NaN,
      target: "(context)",
      ok: null,
      a: results.deliveries_1,
      b: results.baseline_b,
    },
    {
      check: "deliveries/s, 4 endpoints vs B",
      rps: ratio(results.deliveries_4.rps, results.baseline_b.rps),
      p99: NaN,
      target: "(context)",
      ok: null,
      a: results.deliveries_4,
      b: results.baseline_b,
    },
    {
      check: "gRPC GetResource on core vs grpc-js echo",
      rps: ratio(results.grpc_core.rps, results.grpc_echo.rps),
      p99: ratio(results.grpc_core.p99, results.grpc_echo.p99),
      target: "≥ 0.60 req/s",
      ok: ratio(results.grpc_core.rps, results.grpc_echo.rps) >= 0.6,
      a: results.grpc_core,
      b: results.grpc_echo,
    },
    {
      check: "B vs A (cost of one gRPC hop)",
      rps: ratio(results.baseline_b.rps, results.baseline_a.rps),
      p99: ratio(results.baseline_b.p99, results.baseline_a.p99),
      target: "(context)",
      ok: null,
      a: results.baseline_b,
      b: results.baseline_a,
    },
  ];
}

/** Prints the report and writes bench/results/latest.{json,md} and the results section of docs/performance.md. */
export function writeReport({ root, results, jobsRows, breakdown, settings, seedSeconds, started, say }) {
  const { connections, duration, warmup, depth, updates, updateWindow } = settings;
  const rows = checks(results, depth, updates, updateWindow);
  const f0 = (x) => (!Number.isFinite(x) ? "n/a" : x < 10 ? x.toFixed(2) : Math.round(x).toLocaleString("en"));
  const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : "n/a");
  const abs = (r) => `${f0(r.rps)} req/s, p50 ${f2(r.p50)} ms, p99 ${f2(r.p99)} ms`;
  const machine = `${cpus().length} × ${cpus()[0]?.model?.trim() ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${connections} connections, ${duration} s per run (after ${warmup} s warm-up), loopback`;
  const lines = [
    `Run ${new Date().toISOString()} — ${machine}.`,
    "",
    "| check | ratio (req/s) | ratio (p99) | target | met | measured | against |",
    "|---|---|---|---|---|---|---|",
    ...rows.map((r) => `| ${r.check} | ${f2(r.rps)} | ${f2(r.p99)} | ${r.target} | ${r.ok === null ? "" : r.ok ? "yes" : "**no**"} | ${abs(r.a)} | ${abs(r.b)} |`),
    "",
    "| jobs check | ratio | target | met | measured | against |",
    "|---|---|---|---|---|---|",
    ...jobsRows.map((r) => `| ${r.check} | ${f2(r.ratio)} | ${r.target} | ${r.ok === null ? "" : r.ok ? "yes" : "**no**"} | ${r.measured} | ${r.against} |`),
    "",
    "| run | req/s | p50 ms | p99 ms | non-2xx | errors | RSS under load (MB) | CPU ms per request (load = the load generator) |",
    "|---|---|---|---|---|---|---|---|",
    ...Object.entries(results)
      .filter(([name]) => name !== "jobs")
      .map(
        ([name, r]) =>
          `| ${name} | ${f0(r.rps)} | ${f2(r.p50)} | ${f2(r.p99)} | ${r.non2xx ?? 0} | ${r.errors ?? 0} | ${Object.entries(r.rss_mb)
            .map(([p, mb]) => `${p} ${mb}`)
            .join(", ")} | ${
            r.cpu_ms_per_request
              ? Object.entries(r.cpu_ms_per_request)
                  .map(([p, ms]) => `${p} ${ms.toFixed(2)}`)
                  .join(", ")
              : ""
          } |`,
      ),
    "",
    `Peak RSS of each process over the whole run (MB): ${Object.entries(peakRss(results))
      .map(([p, mb]) => `${p} ${mb}`)
      .join(", ")}.`,
    "",
    `Core, whole run (from its /metrics): mean time per call — ${breakdown.calls}; mean database command — ${breakdown.commands}.`,
    "",
    `Seeding ${(depth + 100).toLocaleString("en")} resources through core took ${seedSeconds.toFixed(1)} s; whole run ${Math.round((Date.now() - started) / 1000)} s.`,
  ];
  const markdown = lines.join("\n");
  process.stdout.write(`\n${markdown}\n`);
  const dir = join(root, "bench", "results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "latest.json"),
    `${JSON.stringify({ date: new Date().toISOString(), machine, connections, durationSeconds: duration, depth, seedSeconds, results, coreBreakdown: breakdown, ratios: rows.map(({ a, b, ...r }) => r) }, null, 2)}\n`,
  );
  writeFileSync(join(dir, "latest.md"), `# Benchmark results\n\n${markdown}\n`);
  const docPath = join(root, "docs", "performance.md");
  if (existsSync(docPath)) {
    const doc = readFileSync(docPath, "utf8");
    const updated = doc.replace(/<!-- bench:start -->[\s\S]*<!-- bench:end -->/, `<!-- bench:start -->\n${markdown}\n<!-- bench:end -->`);
    if (updated !== doc) writeFileSync(docPath, updated);
  }
  const failed = Object.values(results).filter((r) => r.errors > 0 || (r.non2xx ?? 0) > 0);
  if (failed.length) say(`some runs had errors or non-2xx answers; see the table`);
}
