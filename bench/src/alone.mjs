// The report of one group of rows run alone (`BENCH_ONLY=<group> npm run bench`, bench/src/main.mjs): a short check on
// a shared machine. Writes bench/results/<group>.{json,md} (never the full report) and prints the table.
import { writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { writeCost } from "./request-logs.mjs";

/** What each group adds below its table: the comparison its rows are for. */
const SUMMARIES = {
  "request-logs": (results) => {
    const on = results.get_request_logs_on;
    const off = results.get_request_logs_off;
    const cost = writeCost(results);
    return [
      `Ratio recorded / not: **${(on.rps / off.rps).toFixed(3)}** req/s (target ≥ 0.95), p99 ${(on.p99 / off.p99).toFixed(2)}×.`,
      `Write cost per logged request (CPU beyond the unrecorded GET): gateway ${cost.gateway_ms.toFixed(3)} ms, database ${cost.database_ms.toFixed(3)} ms, core ${cost.core_ms.toFixed(3)} ms.`,
    ];
  },
  streams: (results) => {
    const open = results.streams_open;
    const lag = results.stream_lag;
    const ms = (x) => (x ?? Number.NaN).toFixed(1);
    return [
      `${open.streams} streams open on one gateway (opened in ${open.open_seconds.toFixed(1)} s): gateway RSS ${open.gateway_rss_mb_before.toFixed(1)} -> ${open.gateway_rss_mb_open.toFixed(1)} MB, **${open.rss_kb_per_stream.toFixed(1)} KB per stream**; one create reached every one of them within ${ms(open.fan_out_ms.max)} ms of its 201 (p50 ${ms(open.fan_out_ms.p50)} ms).`,
      `At ${lag.rps} creates/s with ${lag.streams} streams open: 201 -> event on a stream p50 **${ms(lag.p50)} ms**, p99 **${ms(lag.p99)} ms** (target ≤ 250 ms), **${lag.p99_over_create_p99.toFixed(2)}×** the create's own p99 (${ms(lag.create_p99)} ms); ${lag.total} (create, stream) pairs, ${lag.missing} missing.`,
    ];
  },
  tracing: (results) =>
    [
      ["every request sampled", results.get_tracing_on, results.get_tracing_off],
      ["the production default's ratio", results.get_tracing_ratio, results.get_tracing_off_ratio],
    ]
      .filter(([, on, off]) => on && off)
      .map(([what, on, off]) => {
        const cpu = (r) => (r.cpu_ms_per_request?.gateway ?? Number.NaN) + (r.cpu_ms_per_request?.core ?? Number.NaN);
        return `Traced (${what}) / not: **${(on.rps / off.rps).toFixed(3)}** req/s, p99 ${(on.p99 / off.p99).toFixed(2)}×; gateway + core CPU per request ${cpu(on).toFixed(3)} ms vs ${cpu(off).toFixed(3)} ms (**${(cpu(off) / cpu(on)).toFixed(2)}** of untraced by CPU).`;
      }),
};

/** `loadAtStart`: the 1-minute load average when the bench started, beside the one at the end (what else ran). */
export function writeAloneReport({ root, group, results, settings, loadAtStart }) {
  const cpu = (r, p) => (r.cpu_ms_per_request?.[p] ?? Number.NaN).toFixed(3);
  const rounds = (r) => (r.rounds ? ` (${r.rounds.join(", ")})` : "");
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? "?"}), ${Math.round(totalmem() / 2 ** 30)} GiB; ${settings.duration} s per run, ${settings.connections} connections`;
  const rows = Object.entries(results).filter(([, r]) => typeof r.rps === "number");
  const md = [
    `# BENCH_ONLY=${group}`,
    "",
    `Measured ${new Date().toISOString()} on ${machine}; 1-minute load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end.`,
    "",
    "| run | req/s (rounds) | p50 ms | p99 ms | gateway CPU ms/req | core CPU ms/req | database CPU ms/req | non-2xx |",
    "|---|---|---|---|---|---|---|---|",
    ...rows.map(
      ([name, r]) =>
        `| ${name} | ${Math.round(r.rps)}${rounds(r)} | ${r.p50} | ${r.p99} | ${cpu(r, "gateway")} | ${cpu(r, "core")} | ${cpu(r, "database")} | ${r.non2xx} |`,
    ),
    "",
    ...(SUMMARIES[group]?.(results) ?? []),
    "",
  ].join("\n");
  const out = join(root, "bench", "results");
  writeFileSync(join(out, `${group}.json`), `${JSON.stringify({ machine, ...settings, results }, null, 2)}\n`);
  writeFileSync(join(out, `${group}.md`), md);
  process.stdout.write(md);
}
