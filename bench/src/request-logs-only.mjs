#!/usr/bin/env node
// Only the request-log rows of the bench (bench/src/request-logs.mjs), for a short check on a shared machine:
// `node bench/src/request-logs-only.mjs` after a build. Starts the bench's stack (recording, the default) and a
// second one with REQUEST_LOGS=off, measures the same GET on each (off, on, on, off), prints the row and writes
// bench/results/request-logs.{json,md}. BENCH_DURATION (s per run, default 8) and BENCH_CONNECTIONS (16) as in the bench.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { httpsJson, runner } from "./load.mjs";
import { requestLogRows } from "./request-logs.mjs";
import { startStack } from "./stack.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const DURATION = Number(process.env.BENCH_DURATION ?? 8);
const WARMUP = 2;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const say = (line) => process.stderr.write(`bench: ${line}\n`);
// The machine's 1-minute load average at the start and the end: what else ran beside the measurement.
const loadAtStart = loadavg()[0];
const work = mkdtempSync(join(tmpdir(), "rms-bench-reqlogs-"));
const children = [];
const own = { database: (d) => children.push({ stop: () => d.stop() }), child: (c) => children.push({ stop: () => stopChild(c) }) };

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  child.kill("SIGTERM");
  return new Promise((resolve) => {
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

try {
  const ports = [];
  while (ports.length < 8) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  const [httpsPort, corePort, metricsPort, coreMetricsPort, ...unlogged] = ports;
  const stack = { ...(await startStack({ root, work, ports: { httpsPort, corePort, metricsPort, coreMetricsPort }, own, say })), httpsPort };
  const ca = readFileSync(stack.certFile);
  const headers = { authorization: `Bearer ${stack.key}` };
  const apiUrl = `https://127.0.0.1:${httpsPort}`;
  const created = await httpsJson(
    "POST",
    `${apiUrl}/v1/resources`,
    ca,
    { ...headers, "content-type": "application/json" },
    JSON.stringify({ name: "bench", metadata: { plan: "pro" } }),
  );
  const results = {};
  say("warming the stack up (not measured)");
  await (await runner({ results, connections: CONNECTIONS, duration: DURATION, warmup: WARMUP, ca, say })).warm(`${apiUrl}/v1/resources/${created.id}`, { headers });
  const [uHttps, uCore, uMetrics, uCoreMetrics] = unlogged;
  await requestLogRows({
    results,
    stack,
    root,
    work,
    ports: { httpsPort: uHttps, corePort: uCore, metricsPort: uMetrics, coreMetricsPort: uCoreMetrics },
    own,
    connections: CONNECTIONS,
    duration: DURATION,
    warmup: WARMUP,
    ca,
    headers,
    resourceId: created.id,
    say,
  });
  stack.admin.close();
  stack.coreResources.close();
  const on = results.get_request_logs_on;
  const off = results.get_request_logs_off;
  const cost = results.request_log_write_cost;
  const cpu = (r, p) => (r.cpu_ms_per_request?.[p] ?? Number.NaN).toFixed(3);
  const machine = `${cpus().length} cores (${cpus()[0]?.model ?? "?"}), ${Math.round(totalmem() / 2 ** 30)} GiB; ${DURATION} s per run, ${CONNECTIONS} connections`;
  const md = [
    "# Request logs: GET recorded vs not (bench/src/request-logs-only.mjs)",
    "",
    `Measured ${new Date().toISOString()} on ${machine}; 1-minute load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end.`,
    "",
    "| run | req/s (rounds) | p50 ms | p99 ms | gateway CPU ms/req | core CPU ms/req | database CPU ms/req | non-2xx |",
    "|---|---|---|---|---|---|---|---|",
    ...[
      ["GET, recorded (REQUEST_LOGS on)", on],
      ["GET, not recorded (REQUEST_LOGS=off)", off],
    ].map(
      ([label, r]) =>
        `| ${label} | ${Math.round(r.rps)} (${r.rounds.join(", ")}) | ${r.p50} | ${r.p99} | ${cpu(r, "gateway")} | ${cpu(r, "core")} | ${cpu(r, "database")} | ${r.non2xx} |`,
    ),
    "",
    `Ratio recorded / not: **${(on.rps / off.rps).toFixed(3)}** req/s (target ≥ 0.95), p99 ${(on.p99 / off.p99).toFixed(2)}×.`,
    `Write cost per logged request (CPU beyond the unrecorded GET): gateway ${cost.gateway_ms.toFixed(3)} ms, database ${cost.database_ms.toFixed(3)} ms, core ${cost.core_ms.toFixed(3)} ms.`,
    "",
  ].join("\n");
  const out = join(root, "bench", "results");
  writeFileSync(join(out, "request-logs.json"), `${JSON.stringify({ machine, duration: DURATION, connections: CONNECTIONS, results }, null, 2)}\n`);
  writeFileSync(join(out, "request-logs.md"), md);
  process.stdout.write(md);
} finally {
  for (const child of children.reverse()) await child.stop();
  rmSync(work, { recursive: true, force: true });
}
