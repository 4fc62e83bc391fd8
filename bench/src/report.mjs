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

/**
 * GET with tracing on (`on`, spans exported over OTLP/HTTP to a local sink) against the same GET with tracing off, both
 * stacks up. CPU per request says more than req/s on a shared machine: gateway + core, traced and not, and their ratio.
 */
function tracingCheck(results, on, off, sampled) {
  const a = results[on];
  const b = results[off];
  if (!a || !b) return null;
  const cpuRatio = Number(serviceCpu(b)) / Number(serviceCpu(a));
  return {
    check: `GET /v1/resources/:id with tracing on (${sampled}) vs the same GET with tracing off, both stacks up; gateway + core CPU per request ${serviceCpu(a)} ms vs ${serviceCpu(b)} ms (${cpuRatio.toFixed(2)} of untraced by CPU)`,
    rps: ratio(a.rps, b.rps),
    p99: ratio(a.p99, b.p99),
    target: "(context)",
    ok: null,
    a,
    b,
  };
}

/** One check: run `a` against run `b`; `time` when lower is better (the ratio is b's req/s over a's). */
function check(results, label, aName, bName, { target = "(context)", minRps, maxP99, maxTime, time = false } = {}) {
  const a = results[aName];
  const b = results[bName];
  if (!a || !b) return null;
  const rps = time ? ratio(b.rps, a.rps) : ratio(a.rps, b.rps);
  const p99 = ratio(a.p99, b.p99);
  const bounds = [minRps === undefined || rps >= minRps, maxTime === undefined || rps <= maxTime, maxP99 === undefined || p99 <= maxP99];
  const judged = minRps !== undefined || maxTime !== undefined || maxP99 !== undefined;
  return { check: label, rps, p99, target, ok: judged ? bounds.every(Boolean) : null, a, b };
}

/**
 * The checks: each run against what it is compared with. First the targets of issue 22 (against baseline C, what a
 * user would build instead, and D, the driver alone), then the rows kept for context and for the older targets.
 */
/**
 * What bounds a latency row at a steady rate: the cores its processes kept busy meanwhile (the creates' CPU per request,
 * every process of the stack and the load generator, times the rate), against the machine's. Near all of them, every
 * hop queues behind the others and the p99 grows with the run, whatever the code; the row's floor is then the machine.
 */
function coresBusy(run) {
  const cpu = run?.cpu_ms_per_request;
  if (!cpu || !run.rps) return "";
  const perCreate = Object.values(cpu).reduce((sum, ms) => sum + ms, 0);
  const busy = (perCreate * run.rps) / 1000;
  return `; meanwhile the stack and the load generator kept ${busy.toFixed(2)} of the ${cpus().length} cores busy (${perCreate.toFixed(1)} ms CPU per create and its delivery)`;
}

export function checks(results, { depth, updates, updateWindow, big }) {
  const account = (depth + 100).toLocaleString("en");
  const rows = [
    check(results, "GET /v1/resources/:id vs C (Express + driver: same key check, read, JSON, log line)", "get", "c_get", {
      target: "≥ 0.80 req/s, p99 ≤ 1.5×",
      minRps: 0.8,
      maxP99: 1.5,
    }),
    check(results, "POST /v1/resources + Idempotency-Key vs C's exactly-once create", "post", "c_post", { target: "≥ 0.60 req/s", minRps: 0.6 }),
    check(results, `GET /v1/resources?limit=20 (account of ${account}) vs C`, "list", "c_list", { target: "≥ 0.80 req/s", minRps: 0.8 }),
    check(results, "GET /v1/resources/search (status and metadata) vs C's same query", "search", "c_search", { target: "≥ 0.70 req/s", minRps: 0.7 }),
    check(results, "GET /v1/resources with two filters (status, metadata) vs C's same query", "list_filtered", "c_list_filtered", {
      target: "≥ 0.70 req/s",
      minRps: 0.7,
    }),
    // The bounds of the rows above (issue 30): floor E, the stack's two processes doing nothing but C's commands
    // (baseline-e.mjs), and C with its key's record in a collection of its own, in the stack's shape.
    check(results, "floor E vs C on retrieve (the stack's two processes, Express -> gRPC -> driver, with nothing else)", "e_get", "c_get"),
    check(results, "GET /v1/resources/:id vs floor E (what the stack adds to its shape)", "get", "e_get"),
    check(results, "floor E vs C on a list page", "e_list", "c_list"),
    check(results, "list page vs floor E", "list", "e_list"),
    check(results, "floor E vs C on the two-filter list", "e_list_filtered", "c_list_filtered"),
    check(results, "two-filter list vs floor E", "list_filtered", "e_list_filtered"),
    check(results, "floor E vs C on search", "e_search", "c_search"),
    check(results, "search vs floor E", "search", "e_search"),
    check(results, "C's create with its key's record in a collection of its own (the stack's shape) vs C's exactly-once create", "c_post_own_record", "c_post"),
    check(results, "POST /v1/resources + Idempotency-Key vs C in the stack's shape", "post", "c_post_own_record"),
    check(results, "B vs C (the gRPC hop with no database against the database read it carries)", "baseline_b", "c_get"),
    check(results, "C vs D on retrieve (what HTTP, TLS, JSON, the key check and a log line cost)", "c_get", "d_find"),
    check(results, "C's exactly-once create vs D's insertOne", "c_post", "d_insert"),
    check(results, "C's list page vs D's page query", "c_list", "d_page"),
    check(results, "read concern: D's retrieve by `_id` with `majority` (as core answers) vs `local` (time)", "d_find_majority", "d_find", { time: true }),
    // The p99 column is the lag's p99 over the create's own p99 in the same run (bench/src/streams.mjs).
    check(results, "201 -> event on a stream (100 streams open, paced creates) vs the create itself", "stream_lag", "stream_create", {
      target: "lag p99 ≤ 250 ms",
    }),
    check(results, "read concern: D's list page query with `majority` (as core answers) vs `local` (time)", "d_page_majority", "d_page", { time: true }),
    big > 0
      ? check(results, `list page of 20 at ${big.toLocaleString("en")} resources in the account vs at ${account} (time)`, "list_big", "list_small_again", {
          target: "≤ 1.2× time",
          maxTime: 1.2,
          time: true,
        })
      : null,
    big > 0
      ? check(
          results,
          `two-filter list page at ${big.toLocaleString("en")} resources vs at ${account} (time)`,
          "list_filtered_big",
          "list_filtered_small_again",
          {
            target: "≤ 1.2× time",
            maxTime: 1.2,
            time: true,
          },
        )
      : null,
    big > 0
      ? check(
          results,
          `search page (status and metadata) at ${big.toLocaleString("en")} resources vs at ${account} (time)`,
          "search_big",
          "search_small_again",
          {
            target: "≤ 1.2× time",
            maxTime: 1.2,
            time: true,
          },
        )
      : null,
    results.create_to_delivery
      ? {
          check: `committed create (its 201) -> its delivery at a local receiver, ${Math.round(results.create_to_delivery.rps)} creates/s (half the deliveries/s of 1 endpoint), ${results.create_to_delivery.total} deliveries: p99 (ms); p50 ${results.create_to_delivery.p50?.toFixed(1)} ms${coresBusy(results.post_steady_2)}`,
          rps: NaN,
          p99: results.create_to_delivery.p99,
          target: "p99 ≤ 150 ms",
          ok: results.create_to_delivery.p99 <= 150,
          a: results.create_to_delivery,
          b: results.baseline_b,
        }
      : null,
    // Issue 48's targets, against bare loops that keep their connections alive as the worker does.
    check(results, "deliveries/s of one worker to 1 endpoint vs a bare loop of signed POSTs to the same receiver", "deliveries_1", "deliveries_bare", {
      target: "≥ 0.35 req/s",
      minRps: 0.35,
    }),
    check(
      results,
      "deliveries/s of one worker to 16 endpoints vs a bare loop of signed POSTs to the same 16 (4 in flight each)",
      "deliveries_16",
      "deliveries_bare_16",
      {
        target: "≥ 0.60 req/s",
        minRps: 0.6,
      },
    ),
    results.backlog_drain
      ? check(
          results,
          `a backlog of ${results.backlog_drain.total.toLocaleString("en")} events for one endpoint drained by one worker vs the bare loop's time for the same POSTs (time)`,
          "backlog_drain",
          "backlog_bare",
          { target: "≤ 2× time", maxTime: 2, time: true },
        )
      : null,
    check(
      results,
      "POST /v1/resources with a webhook endpoint (each create fanned out and delivered) vs the same POST just before (endpoint disabled)",
      "post_webhooks",
      "post_again",
      {
        target: "≥ 0.80 req/s",
        minRps: 0.8,
      },
    ),
    results.calm_create_to_delivery_noisy
      ? {
          check: `create (its 201) -> delivery p99 of a well-behaved account, ${Math.round(results.calm_create_to_delivery_noisy.rps)} creates/s, while another account's 16 dead endpoints (never answering) hold a backlog, vs the same with no dead endpoints`,
          rps: NaN,
          p99: ratio(results.calm_create_to_delivery_noisy.p99, results.calm_create_to_delivery.p99),
          target: "p99 ≤ 1.5×",
          ok: ratio(results.calm_create_to_delivery_noisy.p99, results.calm_create_to_delivery.p99) <= 1.5,
          a: results.calm_create_to_delivery_noisy,
          b: results.calm_create_to_delivery,
        }
      : null,
    tracingCheck(results, "get_tracing_on", "get_tracing_off", "every request sampled"),
    tracingCheck(results, "get_tracing_ratio", "get_tracing_off_ratio", "the production default: a ratio of requests sampled, the others sampled out"),
    results.get_request_logs_on && results.get_request_logs_off
      ? {
          // Issue 28: recording every request (after the answer, batched) against a stack with REQUEST_LOGS=off.
          check: `GET /v1/resources/:id recorded in the request logs vs the same GET with REQUEST_LOGS=off, both stacks up; write cost per logged request (CPU beyond the unrecorded GET): gateway ${results.request_log_write_cost?.gateway_ms?.toFixed(3)} ms, database ${results.request_log_write_cost?.database_ms?.toFixed(3)} ms`,
          rps: ratio(results.get_request_logs_on.rps, results.get_request_logs_off.rps),
          p99: ratio(results.get_request_logs_on.p99, results.get_request_logs_off.p99),
          target: "≥ 0.95 req/s",
          ok: ratio(results.get_request_logs_on.rps, results.get_request_logs_off.rps) >= 0.95,
          a: results.get_request_logs_on,
          b: results.get_request_logs_off,
        }
      : null,
    // Kept from the earlier issues.
    check(results, `list page ${depth.toLocaleString("en")} deep vs page 1 (time)`, "list_deep", "list_page1", {
      target: "≤ 1.2× time",
      maxTime: 1.2,
      time: true,
    }),
    check(
      results,
      `update of one resource: last ${updateWindow} of ${updates.toLocaleString("en")} vs first ${updateWindow} (time)`,
      "update_last",
      "update_first",
      {
        target: "≤ 1.2× time",
        maxTime: 1.2,
        time: true,
      },
    ),
    check(
      results,
      "GET /v1/resources/:id with a webhook endpoint (relay + fan-out + a worker delivering) vs the same GET just before",
      "get_webhooks",
      "get_again",
      {
        target: "≥ 0.90 req/s",
        minRps: 0.9,
      },
    ),
    results.create_to_delivery_quarter
      ? {
          check: `committed create (its 201) -> its delivery, ${Math.round(results.create_to_delivery_quarter.rps)} creates/s (a quarter of the deliveries/s of 1 endpoint), ${results.create_to_delivery_quarter.total} deliveries: p99 (ms)${coresBusy(results.post_steady_4)}`,
          rps: NaN,
          p99: results.create_to_delivery_quarter.p99,
          target: "(context)",
          ok: null,
          a: results.create_to_delivery_quarter,
          b: results.baseline_b,
        }
      : null,
    check(results, "deliveries/s, 4 endpoints vs the bare loop (to 1 endpoint)", "deliveries_4", "deliveries_bare"),
    check(
      results,
      "deliveries/s of one worker to 1 endpoint vs the delivery floor (the bare loop with a delivery's database writes by hand, 4 in flight)",
      "deliveries_1",
      "deliveries_floor",
    ),
    check(results, "the delivery floor vs the bare loop (what a delivery's durable bookkeeping costs at 4 in flight)", "deliveries_floor", "deliveries_bare"),
    // The batched floor is the database's bound per delivery, whatever the endpoints: the 16 endpoints' row against it.
    check(
      results,
      "deliveries/s of one worker to 16 endpoints vs the batched delivery floor (a delivery's writes cost the database the same whatever its endpoint)",
      "deliveries_16",
      "deliveries_floor_batched",
    ),
    check(
      results,
      "the backlog drained by one worker vs the batched delivery floor (the bare loop with the batched design's database writes by hand: 4 flights of up to 32, writes grouped)",
      "backlog_drain",
      "deliveries_floor_batched",
    ),
    check(
      results,
      "the batched delivery floor vs the bare loop of the backlog row (what the batched bookkeeping costs at 4 in flight)",
      "deliveries_floor_batched",
      "backlog_bare",
    ),
    check(results, "gRPC GetResource on core vs grpc-js echo", "grpc_core", "grpc_echo", { target: "≥ 0.60 req/s", minRps: 0.6 }),
    check(results, "GET /v1/resources/:id vs B", "get", "baseline_b"),
    check(results, "B vs A (cost of one gRPC hop)", "baseline_b", "baseline_a"),
  ];
  return rows.filter((row) => row !== null);
}

/** Prints the report and writes bench/results/latest.{json,md} and the results section of docs/performance.md. */
/** `name`: the files' name in bench/results/ ("latest" for a whole run, which also refreshes docs/performance.md). */
export function writeReport({ root, results, jobsRows, breakdown, settings, seedSeconds, started, say, name = "latest" }) {
  const { connections, duration, warmup, depth } = settings;
  const rows = checks(results, settings);
  const f0 = (x) => (!Number.isFinite(x) ? "n/a" : x < 10 ? x.toFixed(2) : Math.round(x).toLocaleString("en"));
  const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : "n/a");
  // A row whose side did not run in this group (BENCH_ONLY) says so rather than ending the report.
  const abs = (r) => (r ? `${f0(r.rps)} req/s, p50 ${f2(r.p50)} ms, p99 ${f2(r.p99)} ms` : "not run");
  const machine = `${cpus().length} × ${cpus()[0]?.model?.trim() ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${connections} connections, ${duration} s per run (after ${warmup} s warm-up), loopback`;
  const lines = [
    `Run ${new Date().toISOString()} — ${machine}.`,
    "",
    "| check | ratio (req/s) | ratio (p99) | target | met | measured | against |",
    "|---|---|---|---|---|---|---|",
    ...rows.map(
      (r) => `| ${r.check} | ${f2(r.rps)} | ${f2(r.p99)} | ${r.target} | ${r.ok === null ? "" : r.ok ? "yes" : "**no**"} | ${abs(r.a)} | ${abs(r.b)} |`,
    ),
    "",
    "| jobs check | ratio | target | met | measured | against |",
    "|---|---|---|---|---|---|",
    ...jobsRows.map((r) => `| ${r.check} | ${f2(r.ratio)} | ${r.target} | ${r.ok === null ? "" : r.ok ? "yes" : "**no**"} | ${r.measured} | ${r.against} |`),
    "",
    "| run | req/s | p50 ms | p99 ms | non-2xx | errors | RSS under load (MB) | CPU ms per request (load = the load generator) |",
    "|---|---|---|---|---|---|---|---|",
    ...Object.entries(results)
      // Load runs only: the jobs and files groups report in their own table above.
      .filter(([, r]) => r.rss_mb !== undefined)
      .map(
        ([name, r]) =>
          `| ${name} | ${f0(r.rps)}${r.rounds ? ` (mean of ${r.rounds.map((x) => x.toLocaleString("en")).join(" and ")})` : ""} | ${f2(r.p50)} | ${f2(r.p99)} | ${r.non2xx ?? 0} | ${r.errors ?? 0} | ${Object.entries(
            r.rss_mb,
          )
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
    `Seeding ${(depth + 100).toLocaleString("en")} resources through core took ${seedSeconds.toFixed(1)} s${results.list_big ? `; filling the big account (${settings.big.toLocaleString("en")}, raw insertMany) ${Math.round(results.list_big.fill_seconds)} s` : ""}; whole run ${Math.round((Date.now() - started) / 1000)} s.`,
  ];
  const markdown = lines.join("\n");
  process.stdout.write(`\n${markdown}\n`);
  const dir = join(root, "bench", "results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `${name}.json`),
    `${JSON.stringify({ date: new Date().toISOString(), machine, connections, durationSeconds: duration, depth, seedSeconds, results, coreBreakdown: breakdown, ratios: rows.map(({ a, b, ...r }) => r) }, null, 2)}\n`,
  );
  writeFileSync(join(dir, `${name}.md`), `# Benchmark results\n\n${markdown}\n`);
  const docPath = join(root, "docs", "performance.md");
  if (name === "latest" && existsSync(docPath)) {
    const doc = readFileSync(docPath, "utf8");
    const updated = doc.replace(/<!-- bench:start -->[\s\S]*<!-- bench:end -->/, `<!-- bench:start -->\n${markdown}\n<!-- bench:end -->`);
    if (updated !== doc) writeFileSync(docPath, updated);
  }
  const failed = Object.values(results).filter((r) => r.errors > 0 || (r.non2xx ?? 0) > 0);
  if (failed.length) say(`some runs had errors or non-2xx answers; see the table`);
}
