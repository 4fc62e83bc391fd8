#!/usr/bin/env node
// `node bench/src/pairs.mjs` after a build: only the request-path rows against baseline C (issue 30), each pair in the
// order stack, C, C, stack, on one stack and one C over one mongod: a keyed create, a retrieve, a list page and a
// two-clause search. For a machine that others share, where the full `npm run bench` means little: the ratios to C
// measured in the same run are what to read. Prints one JSON line per row (req/s, p99, CPU per request by process).
// BENCH_DURATION (s per round, default 5), BENCH_CONNECTIONS (16), BENCH_PAIRS (comma list of get,post,list,search;
// default all), BENCH_PORT_BASE (fixed ports), BENCH_PROFILE=1 (CPU profiles of the stack's processes into bench/results/profiles/).
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { C_KEYS, cKeyDocument } from "./baseline-c.mjs";
import { startRole } from "./baselines.mjs";
import { createRequests, httpsJson, runner } from "./load.mjs";
import { benchResource, freePorts, startStack, stopProcess } from "./stack.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const PAIRS = new Set((process.env.BENCH_PAIRS ?? "get,post,list,search").split(","));
const say = (line) => process.stderr.write(`pairs: ${line}\n`);

const work = mkdtempSync(join(tmpdir(), "rms-pairs-"));
const children = [];
const own = { database: (d) => children.push({ stop: () => d.stop() }), child: (c) => children.push({ stop: () => stopProcess(c) }) };

try {
  // BENCH_PORT_BASE: the ports from there (base+443, +51, +64, +65, +100), for a machine shared by port ranges.
  const base = Number(process.env.BENCH_PORT_BASE ?? 0);
  const [httpsPort, corePort, metricsPort, coreMetricsPort, cPort] = base ? [443, 51, 64, 65, 100].map((offset) => base + offset) : await freePorts(5);
  const stack = await startStack({ root, work, ports: { httpsPort, corePort, metricsPort, coreMetricsPort }, own, say });
  const ca = readFileSync(stack.certFile);
  const c = await startRole("baseline-c", [String(cPort), stack.certFile, stack.keyFile, stack.mongoUri, stack.databaseName], {
    stdout: openSync(join(work, "baseline-c.log"), "a"),
  });
  own.child(c);
  const { MongoClient } = await import("mongodb");
  const db = await new MongoClient(stack.mongoUri).connect();
  const { key: verified } = await stack.admin.verifyKey({ secret: stack.key });
  await db.db(stack.databaseName).collection(C_KEYS).insertOne(cKeyDocument(stack.key, verified));
  const apiUrl = `https://127.0.0.1:${httpsPort}`;
  const cUrl = `https://127.0.0.1:${cPort}`;
  const headers = { authorization: `Bearer ${stack.key}` };
  const created = await benchResource(apiUrl, ca, headers);
  // A list and a search worth a page: 200 resources, half of them paused with plan=pro.
  for (let i = 0; i < 200; i++) {
    const body = `name=pairs-${i}&status=${i % 2 ? "paused" : "active"}&metadata[plan]=${i % 2 ? "pro" : "free"}`;
    await httpsJson("POST", `${apiUrl}/v1/resources`, ca, { ...headers, "content-type": "application/x-www-form-urlencoded" }, body);
  }
  const results = {};
  const run = await runner({ results, connections: CONNECTIONS, duration: DURATION, warmup: 2, ca, say });
  say("warming the stack and C up (not measured)");
  await run.warm(`${apiUrl}/v1/resources/${created.id}`, { headers });
  await run.warm(`${apiUrl}/v1/resources`, createRequests(headers));
  await run.warm(`${cUrl}/v1/resources/${created.id}`, { headers });
  const stackPids = stack.pids();
  const cPids = { baseline_c: c.pid, database: stackPids.database };
  const search = `/v1/resources/search?query=${encodeURIComponent("status:'paused' AND metadata['plan']:'pro'")}&limit=10`;
  const rows = [
    ["get", `/v1/resources/${created.id}`, { headers }],
    ["post", "/v1/resources", createRequests(headers)],
    ["list", "/v1/resources?limit=10", { headers }],
    ["search", search, { headers }],
  ];
  for (const [name, path, opts] of rows) {
    if (!PAIRS.has(name)) continue;
    await run.pair({ name, url: `${apiUrl}${path}`, opts, pids: stackPids }, { name: `c_${name}`, url: `${cUrl}${path}`, opts, pids: cPids });
    const ours = results[name];
    const theirs = results[`c_${name}`];
    const rps = (r) => Math.round(r.rps ?? 0);
    const p99 = (r) => r.p99;
    process.stdout.write(
      `${JSON.stringify({
        row: name,
        stack_rps: rps(ours),
        c_rps: rps(theirs),
        ratio: Number((rps(ours) / Math.max(1, rps(theirs))).toFixed(2)),
        stack_p99_ms: p99(ours),
        c_p99_ms: p99(theirs),
        stack_cpu_ms: ours.cpu_ms_per_request,
        c_cpu_ms: theirs.cpu_ms_per_request,
        non2xx: ours.non2xx ?? 0,
      })}\n`,
    );
  }
  await db.close();
  stack.admin.close();
  stack.coreResources?.close();
} finally {
  for (const child of children.reverse()) await child.stop();
  rmSync(work, { recursive: true, force: true });
}
