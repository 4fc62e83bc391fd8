#!/usr/bin/env node
// `npm run bench`: the full stack against four baselines, on this machine, in one run.
//
//   Baseline A: bare Express 5 over HTTPS answering a fixed JSON resource.
//   Baseline B: the same route calling a grpc-js echo service (same proto, no database).
//   Baseline C: Express 5 + the mongodb driver in one process, what a user would write instead (baseline-c.mjs).
//   Baseline D: the mongodb driver alone in a closed loop, the database's own ceiling (driver.mjs).
//   Full stack: `rms start` on free ports, on a genuine mongod (MONGODB_URI when set); C and D use the same server.
//
// Every HTTP run is autocannon at the same concurrency over loopback; gRPC runs use a closed-loop driver at
// the same concurrency. Prints a Markdown table and writes bench/results/latest.{json,md}; refreshes the
// results section of docs/performance.md. Accounts and keys come from the admin service, everything else
// from the public API (and core's gRPC service for the rows that measure core alone).
// The parts: stack.mjs, baselines.mjs, baseline-c.mjs, driver.mjs, load.mjs (runs and meters), receiver.mjs,
// tracing.mjs and request-logs.mjs (a second stack beside the first: two-stacks.mjs), webhooks.mjs, depth.mjs,
// big.mjs, jobs.mjs, files.mjs, invariants.mjs (the read-only looks at stored state), report.mjs, alone.mjs.
// Tunables: BENCH_DURATION (s per run, default 8), BENCH_CONNECTIONS (default 16), BENCH_SEED (list depth, default 10000),
// BENCH_DELIVERIES (events per deliveries/s run, default 500), BENCH_NOISY_RATE (creates/s of the noisy-neighbour rows,
// 20), BENCH_NOISY_ITEMS (the dead endpoints' import, 625: 10,000 deliveries), BENCH_LIST_REQUESTS (5), BENCH_UPDATES (10000),
// BENCH_JOB_ITEMS (10000), BENCH_JOB_ITEMS_LARGE (100000, 0 to skip), BENCH_BIG (the big account's resources, 1000000,
// 0 to skip), BENCH_FILES_ROWS (the files rows' import and export, 1000000, 0 to skip), BENCH_FILES_UPLOAD_MB (512),
// BENCH_PROFILE=1 (CPU profiles into bench/results/profiles/), BENCH_WEBHOOK_BACKLOG (the webhook backlog row's events for
// one endpoint, 100000, 0 to skip), BENCH_LAG_TRACE (a file: a line per create of the create -> delivery rows, its row, when its
// 201 came (ms) and its lag to the delivery, -1 when none came).
// BENCH_STREAMS (open streams of the streams row, 1000), BENCH_STREAM_RATE (creates/s of the stream lag row, 100),
// BENCH_STREAM_LAG_STREAMS (streams open during it, 100). BENCH_DB_TOP=1: after each create -> delivery row, what the
// database did per create, by collection and by command (bench/src/db-top.mjs).
// BENCH_ONLY=<group>: that group's rows alone on the bench's stack, for a before/after in minutes; writes
// bench/results/<group>.{json,md} instead of the full report, with the report's checks for
//   requests: the GET, keyed POST, list, two-filter list and search pairs against C, and D (the driver alone, with
//             the read concern's cost);
//   webhooks: the delivery rows;
//   noisy: the noisy-neighbour rows alone, BENCH_NOISY_ROUNDS times;
// and alone.mjs's table for tracing, request-logs and streams.
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeAloneReport } from "./alone.mjs";
import { C_KEYS, cKeyDocument } from "./baseline-c.mjs";
import { FIXED, startRole } from "./baselines.mjs";
import { bigAccountRows } from "./big.mjs";
import { depthRows } from "./depth.mjs";
import { driverRows } from "./driver.mjs";
import { benchFiles } from "./files.mjs";
import { benchJobs } from "./jobs.mjs";
import { coreBreakdown, createRequests, runner } from "./load.mjs";
import { writeReport } from "./report.mjs";
import { benchResource, freePorts, startStack, stopProcess } from "./stack.mjs";
import { requestLogRows } from "./request-logs.mjs";
import { streamRows } from "./streams.mjs";
import { tracingRows } from "./tracing.mjs";
import { noisyOnlyRows, webhookRows } from "./webhooks.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const DURATION = Number(process.env.BENCH_DURATION ?? 8);
const WARMUP = 2;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const DEPTH = Number(process.env.BENCH_SEED ?? 10_000);
// List pages are compared with each other, one request at a time (see docs/performance.md).
const LIST_REQUESTS = Number(process.env.BENCH_LIST_REQUESTS ?? 5);
// The size rule of issue 13: one resource updated this many times, one update at a time (relay running).
const UPDATES = Number(process.env.BENCH_UPDATES ?? 10_000);
const UPDATE_WINDOW = Math.min(500, Math.floor(UPDATES / 2));
const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 500);
const BIG = Number(process.env.BENCH_BIG ?? 1_000_000);
/** The files rows' import and export size (BENCH_FILES_ROWS, default 1,000,000; 0 skips the files rows). */
const FILE_ROWS = Number(process.env.BENCH_FILES_ROWS ?? 1_000_000);

/** BENCH_ONLY: one group of rows alone (see GROUPS below). */
const ONLY = process.env.BENCH_ONLY ?? "";

const started = Date.now();
const loadAtStart = loadavg()[0];
const say = (line) => process.stderr.write(`bench: ${line}\n`);
const proto = await import("@rms/proto");
const { PublicApi } = await import("@rms/cli/stack");
const work = mkdtempSync(join(tmpdir(), "rms-bench-"));
const children = [];
const cleanup = async () => {
  for (const child of children.reverse()) await stopProcess(child);
  rmSync(work, { recursive: true, force: true });
};
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => void cleanup().then(() => process.exit(130)));
let database = null;

try {
  const [httpsPort, corePort, metricsPort, coreMetricsPort, aPort, bPort, echoPort, cPort, ...morePorts] = await freePorts(16);
  const tracedPorts = morePorts.slice(0, 4);
  const unloggedPorts = morePorts.slice(4, 8);
  const own = { database: (d) => (database = d), child: (c) => children.push(c) };
  const stack = { ...(await startStack({ root, work, ports: { httpsPort, corePort, metricsPort, coreMetricsPort }, own, say })), httpsPort };
  const ca = readFileSync(stack.certFile);
  const newApi = (key) => new PublicApi(stack.dataDir, httpsPort, key);
  const api = newApi(stack.key);

  // ---- data: one resource to retrieve
  const apiUrl = `https://127.0.0.1:${httpsPort}`;
  const headers = { authorization: `Bearer ${stack.key}` };
  const created = await benchResource(apiUrl, ca, headers);
  const { key: verified } = await stack.admin.verifyKey({ secret: stack.key });
  const tenant = { accountId: verified.accountId, livemode: false };

  // ---- the runs
  const results = {};
  const run = await runner({ results, connections: CONNECTIONS, duration: DURATION, warmup: WARMUP, ca, say });
  // The stack was just started: its first rows would measure JIT compilation and connection pools filling in
  // three processes (a run of the same GET later answered 1.6x as many). One unmeasured pass of each kind of
  // request the first rows send, as long as a measured run, before anything is measured.
  say("warming the stack up (not measured)");
  await run.warm(`https://127.0.0.1:${httpsPort}/v1/resources/${created.id}`, { headers: { authorization: `Bearer ${stack.key}` } });
  await run.warm(`https://127.0.0.1:${httpsPort}/v1/resources`, createRequests({ authorization: `Bearer ${stack.key}` }));
  // Baseline C (what a user would write instead), for a whole run and for the request path alone.
  const withC = ONLY === "" || ONLY === "requests";
  // C logs its request lines to a file, as the stack's go to its log file; at the stack's level (LOG_LEVEL, default info).
  const c = withC
    ? await startRole("baseline-c", [String(cPort), stack.certFile, stack.keyFile, stack.mongoUri, stack.databaseName], {
        stdout: openSync(join(work, "baseline-c.log"), "a"),
      })
    : null;
  if (c) children.push(c);
  // Floor E (the stack's two processes doing nothing but C's reads) beside C.
  const [floorPort, ePort] = withC ? await freePorts(2) : [];
  const floorCore = withC ? await startRole("floor-core", [String(floorPort), stack.mongoUri, stack.databaseName]) : null;
  if (floorCore) children.push(floorCore);
  const e = withC
    ? await startRole("baseline-e", [String(ePort), stack.certFile, stack.keyFile, `127.0.0.1:${floorPort}`, stack.mongoUri, stack.databaseName], {
        stdout: openSync(join(work, "baseline-e.log"), "a"),
      })
    : null;
  if (e) children.push(e);
  const { MongoClient } = await import("mongodb");
  const benchDb = await new MongoClient(stack.mongoUri).connect();
  const cKeys = benchDb.db(stack.databaseName).collection(C_KEYS);
  const cBaseline = {
    url: `https://127.0.0.1:${cPort}`,
    /** C's key collection learns a key of the stack (C finds it by its hash). */
    key: (secret, tenant) => cKeys.insertOne(cKeyDocument(secret, tenant)),
    pids: () => ({ baseline_c: c?.pid, database: stack.pids().database }),
  };
  /** Floor E of the reads (baseline-e.mjs); C's key collection holds the keys it accepts. */
  const eFloor = e
    ? { url: `https://127.0.0.1:${ePort}`, pids: () => ({ baseline_e: e.pid, floor_core: floorCore.pid, database: stack.pids().database }) }
    : null;

  // The stack against C, each pair in the order stack, C, C, stack (run.pair: the mean of each side's two rounds).
  const requestPairs = async () => {
    await cBaseline.key(stack.key, verified);
    await run.pair(
      { name: "get", url: `${apiUrl}/v1/resources/${created.id}`, opts: { headers }, pids: stack.pids() },
      { name: "c_get", url: `${cBaseline.url}/v1/resources/${created.id}`, opts: { headers }, pids: cBaseline.pids() },
      eFloor && { name: "e_get", url: `${eFloor.url}/v1/resources/${created.id}`, opts: { headers }, pids: eFloor.pids() },
    );
    await run.pair(
      { name: "post", url: `${apiUrl}/v1/resources`, opts: createRequests(headers), pids: stack.pids() },
      { name: "c_post", url: `${cBaseline.url}/v1/resources`, opts: createRequests(headers), pids: cBaseline.pids() },
      // C with its key's record in a collection of its own, in the stack's shape (baseline-c.mjs, the own-record route).
      { name: "c_post_own_record", url: `${cBaseline.url}/own-record/v1/resources`, opts: createRequests(headers), pids: cBaseline.pids() },
    );
  };
  // The list pages against C, at a depth of DEPTH resources (and, in a whole run, the size rule's updates).
  const deepPages = (updates) =>
    depthRows({
      run,
      results,
      stack,
      apiUrl,
      ca,
      c: cBaseline,
      e: eFloor,
      depth: DEPTH,
      listRequests: LIST_REQUESTS,
      updates,
      updateWindow: UPDATE_WINDOW,
      say,
    });
  // D: the driver alone, on the resource the GET rows read and the list rows' account (and the read concern's cost).
  const driverBaseline = (listTenant) =>
    driverRows({
      run,
      results,
      mongoUri: stack.mongoUri,
      databaseName: stack.databaseName,
      resourceId: created.id,
      listTenant: { account: listTenant.accountId, livemode: false },
      pids: { database: stack.pids().database },
    });
  const webhooks = () =>
    webhookRows({ run, results, stack, api, newApi, apiUrl, resourceId: created.id, connections: CONNECTIONS, deliveries: DELIVERIES, say });
  // The rows of a second stack beside this one (its own four ports), by name: BENCH_ONLY runs one of them alone.
  const beside = { stack, root, work, own, connections: CONNECTIONS, duration: DURATION, warmup: WARMUP, ca, headers, resourceId: created.id, say };
  const portsOf = ([httpsPort, corePort, metricsPort, coreMetricsPort]) => ({ httpsPort, corePort, metricsPort, coreMetricsPort });
  const GROUPS = {
    // GET with tracing on (a second stack, every request sampled and exported) vs off, both stacks up (bench/src/tracing.mjs).
    tracing: () => tracingRows({ ...beside, results, ports: portsOf(tracedPorts) }),
    // GET recorded in the request logs (this stack) vs a second stack with REQUEST_LOGS=off (bench/src/request-logs.mjs).
    "request-logs": () => requestLogRows({ ...beside, results, ports: portsOf(unloggedPorts) }),
    requests: async () => {
      await requestPairs();
      const depth = await deepPages(0);
      await driverBaseline(depth.listTenant);
      return depth;
    },
    webhooks,
    noisy: () => noisyOnlyRows({ run, results, stack, newApi, apiUrl, say }),
    // 1,000 open streams on the gateway (memory per stream) and the lag from a create's 201 to its event on a stream (bench/src/streams.mjs).
    streams: () => streamRows({ run, results, stack, apiUrl, ca, headers, accountId: verified.accountId, say }),
  };
  if (ONLY) {
    if (!GROUPS[ONLY]) throw new Error(`BENCH_ONLY=${ONLY}: no such group (${Object.keys(GROUPS).join(", ")})`);
    const depth = await GROUPS[ONLY]();
    api.close();
    await benchDb.close();
    if (ONLY === "requests" || ONLY === "webhooks" || ONLY === "noisy") {
      // With the report's checks (ratios and targets), under the group's own name.
      const breakdown = await coreBreakdown(coreMetricsPort);
      const settings = { connections: CONNECTIONS, duration: DURATION, warmup: WARMUP, depth: DEPTH, updates: 0, updateWindow: 0, big: 0 };
      writeReport({ root, results, jobsRows: [], breakdown, settings, seedSeconds: depth?.seedSeconds ?? 0, started, say, name: ONLY });
    } else {
      writeAloneReport({ root, group: ONLY, results, settings: { connections: CONNECTIONS, duration: DURATION }, loadAtStart });
    }
    stack.admin.close();
    stack.coreResources.close();
  } else {
    // ---- baselines
    say("starting the baselines");
    const echo = await startRole("echo", [String(echoPort)]);
    children.push(echo);
    const a = await startRole("baseline-a", [String(aPort), stack.certFile, stack.keyFile]);
    children.push(a);
    const b = await startRole("baseline-b", [String(bPort), stack.certFile, stack.keyFile, `127.0.0.1:${echoPort}`]);
    children.push(b);
    await run.http("baseline_a", `https://127.0.0.1:${aPort}/v1/resources/${FIXED.id}`, {}, { baseline_a: a.pid });
    await run.http("baseline_b", `https://127.0.0.1:${bPort}/v1/resources/${FIXED.id}`, {}, { baseline_b: b.pid, echo: echo.pid });
    await requestPairs();
    await GROUPS.tracing();
    await GROUPS["request-logs"]();
    const echoClient = proto.createClient(proto.ResourceService, `127.0.0.1:${echoPort}`, { timeoutMs: 10_000 });
    await run.grpc("grpc_echo", echoClient, { tenant, id: FIXED.id }, { echo: echo.pid });
    await run.grpc("grpc_core", stack.coreResources, { tenant, id: created.id }, stack.pids());
    await webhooks();
    await GROUPS.streams();
    api.close();
    // The deep page comes after the runs above: every extra document in the database weighs on what follows.
    const { seedSeconds, listKey, listTenant } = await deepPages(UPDATES);
    await driverBaseline(listTenant);
    // Last on this stack: a million documents weigh on everything after them.
    if (BIG > 0)
      await bigAccountRows({ run, results, stack, apiUrl, mongoUri: stack.mongoUri, databaseName: stack.databaseName, size: BIG, smallKey: listKey, say });
    await benchDb.close();
    echoClient.close();
    // The jobs rows (issue 14) on a stack of their own, so their raw baselines share its database.
    say("jobs: import, bulk update and retrieve during an import (bench/src/jobs.mjs)");
    const jobsBench = await benchJobs({ say, duration: DURATION });
    results.jobs = jobsBench.result;
    // The files rows (issue 27) on a stack of their own: upload, import from a file and export against the driver.
    const filesBench = FILE_ROWS > 0 ? await benchFiles({ say }) : null;
    if (filesBench) results.files = filesBench.result;
    const breakdown = await coreBreakdown(coreMetricsPort);
    stack.admin.close();
    stack.coreResources.close();

    writeReport({
      root,
      results,
      jobsRows: [...jobsBench.rows, ...(filesBench?.rows ?? [])],
      breakdown,
      settings: { connections: CONNECTIONS, duration: DURATION, warmup: WARMUP, depth: DEPTH, updates: UPDATES, updateWindow: UPDATE_WINDOW, big: BIG },
      seedSeconds,
      started,
      say,
    });
  }
} finally {
  await cleanup();
  await database?.stop();
}
