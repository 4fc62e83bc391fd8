#!/usr/bin/env node
// `npm run bench`: the full stack against two baselines, on this machine, in one run.
//
//   Baseline A: bare Express 5 over HTTPS answering a fixed JSON resource.
//   Baseline B: the same route calling a grpc-js echo service (same proto, no database).
//   Full stack: `rms start` (embedded database unless MONGODB_URI) on free ports.
//
// Every HTTP run is autocannon at the same concurrency over loopback; gRPC runs use a
// closed-loop driver at the same concurrency. Prints a Markdown table and writes
// bench/results/latest.{json,md}; refreshes the results section of docs/performance.md.
// Webhooks: GET and POST again (warm), then with a webhook endpoint on the account (relay + fan-out +
// a worker delivering to a receiver in this process), the time from each 201 to its delivery, and
// deliveries per second with 1 and 4 endpoints.
// Tunables: BENCH_DURATION (s per run, default 8), BENCH_CONNECTIONS (default 16), BENCH_SEED (list depth, default 10000),
// BENCH_DELIVERIES (events per deliveries/s run, default 500).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { createServer as createNetServer } from "node:net";
import { cpus, tmpdir, totalmem } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const role = process.argv[2];

const FIXED = { id: "res_0VbmlGnEAqOeNqcwCzlGLg", object: "resource", name: "bench", status: "active", metadata: { plan: "pro" }, created: 1700000000 };

// ---------------------------------------------------------------- child roles
if (role === "baseline-a" || role === "baseline-b") {
  const { default: express } = await import("express");
  const { createServer } = await import("node:https");
  const [, , , port, certFile, keyFile, echoAddr] = process.argv;
  const app = express();
  app.disable("x-powered-by");
  app.disable("etag");
  if (role === "baseline-a") {
    app.get("/v1/resources/:id", (_req, res) => {
      res.type("application/json").send(JSON.stringify(FIXED));
    });
  } else {
    const { ResourceService, createClient } = await import("@rms/proto");
    const client = createClient(ResourceService, echoAddr, { timeoutMs: 10_000 });
    app.get("/v1/resources/:id", async (req, res) => {
      const { resource } = await client.getResource({ tenant: { accountId: "acct_x", livemode: false }, id: req.params.id });
      const metadata = Object.create(null);
      for (const { key, value } of resource.metadata) metadata[key] = value;
      res
        .type("application/json")
        .send(JSON.stringify({ id: resource.id, object: "resource", name: resource.name, status: "active", metadata, created: Number(resource.created) }));
    });
  }
  createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, app).listen(Number(port), "127.0.0.1", () => process.send?.("ready"));
} else if (role === "echo") {
  const { Server, ServerCredentials } = await import("@grpc/grpc-js");
  const { ResourceService, ResourceStatus, addService } = await import("@rms/proto");
  const [, , , port] = process.argv;
  const resource = { id: FIXED.id, name: FIXED.name, status: ResourceStatus.ACTIVE, metadata: [{ key: "plan", value: "pro" }], created: BigInt(FIXED.created) };
  const server = new Server();
  const impl = {};
  for (const method of ResourceService.methods) impl[method.localName] = async () => ({ resource });
  impl.listResources = async () => ({ resources: [resource], hasMore: false });
  impl.deleteResource = async () => ({ id: FIXED.id });
  addService(server, ResourceService, impl);
  server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (error) => {
    if (error) throw error;
    process.send?.("ready");
  });
} else {
  await main();
}

// ---------------------------------------------------------------- the driver
async function main() {
  const DURATION = Number(process.env.BENCH_DURATION ?? 8);
  const WARMUP = 2;
  const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
  const DEPTH = Number(process.env.BENCH_SEED ?? 10_000);
  // List pages are compared with each other, one request at a time (see docs/performance.md).
  const LIST_REQUESTS = Number(process.env.BENCH_LIST_REQUESTS ?? 5);
  // The size rule of issue 13: one resource updated this many times, one update at a time (relay running).
  const UPDATES = Number(process.env.BENCH_UPDATES ?? 10_000);
  const UPDATE_WINDOW = Math.min(500, Math.floor(UPDATES / 2));
  const started = Date.now();
  const { default: autocannon } = await import("autocannon");
  const proto = await import("@rms/proto");
  const work = mkdtempSync(join(tmpdir(), "rms-bench-"));
  const children = [];
  const say = (line) => process.stderr.write(`bench: ${line}\n`);
  const cleanup = async () => {
    for (const child of children.reverse()) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        await new Promise((r) => {
          const t = setTimeout(() => {
            child.kill("SIGKILL");
            r();
          }, 15_000);
          child.once("exit", () => {
            clearTimeout(t);
            r();
          });
        });
      }
    }
    rmSync(work, { recursive: true, force: true });
  };
  for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => void cleanup().then(() => process.exit(130)));
  let database = null;

  try {
    const ports = await freePorts(9);
    const [httpsPort, corePort, metricsPort, coreMetricsPort, aPort, bPort, echoPort] = ports;
    const dataDir = join(work, "data");
    // The bench starts the database itself (the same engine `rms start` would pick), so it can write webhook
    // endpoints directly: the stack is given its address and a webhook secret key.
    const { startDatabase } = await import("@rms/test-db");
    const { encryptSecret, newEndpointSecret, newMasterKeyText, parseMasterKey } = await import("@rms/core");
    const { MongoClient } = await import("mongodb");
    database = process.env.MONGODB_URI ? null : await startDatabase({ dataDir: join(dataDir, "db"), env: { ...process.env, MONGODB_URI: "" } });
    const mongoUri = process.env.MONGODB_URI ?? database.uri;
    const secretKey = newMasterKeyText();

    // ---- the full stack
    say(`starting the stack (data in a temporary directory)`);
    const logFile = join(work, "stack.log");
    const { openSync } = await import("node:fs");
    const out = openSync(logFile, "a");
    const env = {
      ...process.env,
      RMS_DATA_DIR: dataDir,
      RMS_ADMIN_TOKEN: "",
      PORT: String(httpsPort),
      HTTP_PORT: "0",
      CORE_ADDR: `127.0.0.1:${corePort}`,
      METRICS_PORT: String(metricsPort),
      CORE_METRICS_PORT: String(coreMetricsPort),
      WORKER_METRICS_PORT: "0",
      RATE_LIMIT_TEST: "100000000",
      RATE_LIMIT_LIVE: "100000000",
      RATE_LIMIT_ADDRESS: "100000000",
      MONGODB_URI: mongoUri,
      RMS_SECRET_KEY: secretKey,
      WEBHOOK_ALLOW_PRIVATE: "true",
    };
    // BENCH_PROFILE=1: CPU profiles of the stack's processes (written when they stop) into bench/results/profiles/.
    const profileDir = join(root, "bench", "results", "profiles");
    if (process.env.BENCH_PROFILE === "1") {
      mkdirSync(profileDir, { recursive: true });
      env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ""} --cpu-prof --cpu-prof-dir=${profileDir}`.trim();
    }
    const stack = spawn(process.execPath, [join(root, "apps/cli/dist/rms.js"), "start"], { env, stdio: ["ignore", out, out] });
    children.push(stack);
    await until(
      () => readFileSync(logFile, "utf8").includes("rms: ready"),
      180_000,
      () => stack.exitCode !== null && readFileSync(logFile, "utf8"),
    );
    const key = readFileSync(logFile, "utf8").match(/sk_test_[0-9A-Za-z]+/)?.[0];
    if (!key) throw new Error("no test key in the first-start output");
    const certFile = join(dataDir, "tls", "cert.pem");
    const keyFile = join(dataDir, "tls", "key.pem");
    const ca = readFileSync(certFile);
    const adminToken = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
    const auth = { metadata: { authorization: `Bearer ${adminToken}` }, timeoutMs: 30_000 };
    const admin = proto.createClient(proto.AdminService, `127.0.0.1:${corePort}`, auth);
    const coreResources = proto.createClient(proto.ResourceService, `127.0.0.1:${corePort}`, auth);
    const stackPids = () => {
      const found = {};
      for (const pid of childPids(stack.pid)) {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
        if (cmd.includes("apps/core/dist/worker/main.js")) found.worker = pid;
        else if (cmd.includes("apps/core/dist/main.js")) found.core = pid;
        else if (cmd.includes("apps/gateway/dist/main.js")) found.gateway = pid;
        else found.database = pid;
      }
      if (database?.pid) found.database = database.pid;
      return found;
    };

    // ---- baselines
    say("starting the baselines");
    children.push(await startRole("echo", [String(echoPort)]));
    const a = await startRole("baseline-a", [String(aPort), certFile, keyFile]);
    children.push(a);
    const b = await startRole("baseline-b", [String(bPort), certFile, keyFile, `127.0.0.1:${echoPort}`]);
    children.push(b);
    const echoPid = children.find((c) => c.spawnargs.includes("echo")).pid;

    // ---- data: one resource to retrieve; an account with DEPTH + 100 resources for the deep page
    const api = `https://127.0.0.1:${httpsPort}`;
    const headers = { authorization: `Bearer ${key}` };
    const created = await await httpsJson(
      "POST",
      `${api}/v1/resources`,
      ca,
      { ...headers, "content-type": "application/json" },
      JSON.stringify({ name: "bench", metadata: { plan: "pro" } }),
    );
    const { key: verified } = await admin.verifyKey({ secret: key });
    const tenant = { accountId: verified.accountId, livemode: false };
    // ---- the runs
    let seedSeconds = 0;
    const results = {};
    const http = async (name, url, opts = {}, pids = {}) => {
      say(`run ${name}`);
      const run = (duration) =>
        autocannon({
          url,
          connections: opts.connections ?? CONNECTIONS,
          duration,
          timeout: 60,
          tlsOptions: { ca },
          headers: opts.headers ?? {},
          method: opts.method ?? "GET",
          ...(opts.requests ? { requests: opts.requests } : {}),
          ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
          ...(opts.body ? { body: opts.body } : {}),
        });
      await run(WARMUP);
      const rss = sampleRss(pids);
      const cpu = cpuMeter({ ...pids, load: process.pid });
      const r = await run(DURATION);
      const cpuMs = cpu.stop();
      const perRequest = Object.fromEntries(Object.entries(cpuMs).map(([p, ms]) => [p, ms / Math.max(1, r.requests.total)]));
      results[name] = {
        rps: r.requests.average,
        p50: r.latency.p50,
        p99: r.latency.p99,
        non2xx: r.non2xx,
        errors: r.errors + r.timeouts,
        total: r.requests.total,
        rss_mb: rss.stop(),
        cpu_ms_per_request: perRequest,
      };
    };
    const grpc = async (name, client, request, pids = {}) => {
      say(`run ${name}`);
      await closedLoop(() => client.getResource(request), CONNECTIONS, WARMUP);
      const rss = sampleRss(pids);
      const cpu = cpuMeter({ ...pids, load: process.pid });
      const r = await closedLoop(() => client.getResource(request), CONNECTIONS, DURATION);
      const cpuMs = cpu.stop();
      const perRequest = Object.fromEntries(Object.entries(cpuMs).map(([p, ms]) => [p, ms / Math.max(1, r.total)]));
      results[name] = { ...r, rss_mb: rss.stop(), cpu_ms_per_request: perRequest };
    };

    await http("baseline_a", `https://127.0.0.1:${aPort}/v1/resources/${FIXED.id}`, {}, { baseline_a: a.pid });
    await http("baseline_b", `https://127.0.0.1:${bPort}/v1/resources/${FIXED.id}`, {}, { baseline_b: b.pid, echo: echoPid });
    await http("get", `${api}/v1/resources/${created.id}`, { headers }, stackPids());
    // One form create with a fresh Idempotency-Key per request; `onAnswer` (when given) learns each 201's resource id.
    let n = 0;
    const createRequest = (onAnswer) => ({
      method: "POST",
      requests: [
        {
          method: "POST",
          setupRequest: (req) => ({
            ...req,
            headers: { ...headers, "content-type": "application/x-www-form-urlencoded", "idempotency-key": `bench-${process.pid}-${Date.now()}-${n++}` },
            body: "name=bench&metadata[plan]=pro",
          }),
          ...(onAnswer
            ? {
                onResponse: (status, body) => {
                  if (status === 201) onAnswer(JSON.parse(body).id);
                },
              }
            : {}),
        },
      ],
    });
    await http("post", `${api}/v1/resources`, createRequest(), stackPids());
    const echoClient = proto.createClient(proto.ResourceService, `127.0.0.1:${echoPort}`, { timeoutMs: 10_000 });
    await grpc("grpc_echo", echoClient, { tenant, id: FIXED.id }, { echo: echoPid });
    await grpc("grpc_core", coreResources, { tenant, id: created.id }, stackPids());

    // ---- webhooks: a receiver here, endpoints written into the stack's database
    const mongo = await new MongoClient(mongoUri).connect();
    const db = mongo.db(process.env.MONGODB_DATABASE ?? "rms");
    const keyring = { primary: parseMasterKey(secretKey) };
    const received = { byPath: new Map(), createdAt: new Map() };
    const { createServer: createHttpServer } = await import("node:http");
    const receiver = createHttpServer((req, res) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const at = performance.now();
        received.byPath.set(req.url, (received.byPath.get(req.url) ?? 0) + 1);
        try {
          const event = JSON.parse(Buffer.concat(chunks).toString("utf8"));
          if (event.type === "resource.created" && !received.createdAt.has(event.data.object.id)) received.createdAt.set(event.data.object.id, at);
        } catch {}
        res.end("ok");
      });
    });
    await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
    const receiverPort = receiver.address().port;
    let endpoints = 0;
    const addEndpoint = async (accountId, path) => {
      const id = `we_bench${Date.now()}${endpoints++}`;
      await db.collection("webhook_endpoints").insertOne({
        _id: id,
        account: accountId,
        livemode: false,
        url: `http://127.0.0.1:${receiverPort}${path}`,
        enabled_events: ["*"],
        status: "enabled",
        description: null,
        metadata: [],
        created: Math.floor(Date.now() / 1000),
        slot: endpoints,
        secrets: [{ sealed: encryptSecret(newEndpointSecret(), keyring, id), expires_at: null }],
        version: 0,
        pending_events: [],
        idempotency: id,
        request_hash: null,
      });
    };
    const pendingDeliveries = () => db.collection("webhook_deliveries").countDocuments({ status: "pending" });
    // Settled: no outbox holds an event (the relay copied and fanned out everything) and no delivery is pending.
    const drain = (bound = 300_000) =>
      eventually(async () => (await db.collection("resources").countDocuments({ "pending_events.0": { $exists: true } })) === 0 && (await pendingDeliveries()) === 0, bound);
    // The plain GET and POST again, right before the endpoint exists: the stack is warm now (the first rows run
    // right after its start), so the rows with an endpoint are compared with these.
    await http("get_again", `${api}/v1/resources/${created.id}`, { headers }, stackPids());
    await addEndpoint(tenant.accountId, "/main");
    await http("get_webhooks", `${api}/v1/resources/${created.id}`, { headers }, stackPids());
    await db.collection("webhook_endpoints").updateOne({ account: tenant.accountId }, { $set: { status: "disabled" } });
    await http("post_again", `${api}/v1/resources`, createRequest(), stackPids());
    await db.collection("webhook_endpoints").updateOne({ account: tenant.accountId }, { $set: { status: "enabled" } });
    // Throughput: creates as fast as they go, every one fanned out to the endpoint and delivered meanwhile.
    await http("post_webhooks", `${api}/v1/resources`, createRequest(), stackPids());
    say("waiting for the deliveries of the POST run");
    await drain();
    // Deliveries per second: DELIVERIES creates through core as fast as it takes them, in an account with 1 (then 4)
    // endpoints; timed from the first create to the last delivery.
    const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 500);
    for (const count of [1, 4]) {
      say(`run deliveries/s with ${count} endpoint${count === 1 ? "" : "s"}`);
      const { account: hooked } = await admin.createAccount({});
      const paths = Array.from({ length: count }, (_, i) => `/fan${count}-${i}`);
      for (const path of paths) await addEndpoint(hooked.id, path);
      const deliveredNow = () => paths.reduce((sum, path) => sum + (received.byPath.get(path) ?? 0), 0);
      const t0 = performance.now();
      let made = 0;
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (made < DELIVERIES) {
            made++;
            await coreResources.createResource({ tenant: { accountId: hooked.id, livemode: false }, name: "hooked" });
          }
        }),
      );
      await eventually(async () => deliveredNow() >= DELIVERIES * count, 300_000);
      await drain();
      const seconds = (performance.now() - t0) / 1000;
      results[`deliveries_${count}`] = { rps: (DELIVERIES * count) / seconds, p50: NaN, p99: NaN, total: DELIVERIES * count, errors: 0, rss_mb: {} };
    }
    // Latency: creates through the gateway at a steady fraction of the rate the whole pipeline (relay, fan-out,
    // worker) delivered above: a half and a quarter. Near saturation the backlog, and so the latency, grows with the
    // run; the quarter shows the latency of a pipeline that keeps up. Each 201's resource id with the time it was
    // answered; the receiver notes when its resource.created arrived.
    for (const [name, divisor] of [
      ["create_to_delivery", 2],
      ["create_to_delivery_quarter", 4],
    ]) {
      const answeredAt = new Map();
      const steadyRate = Math.max(1, Math.round(Math.min(results.post.rps, results.deliveries_1.rps) / divisor));
      await http(`post_steady_${divisor}`, `${api}/v1/resources`, { ...createRequest((id) => answeredAt.set(id, performance.now())), overallRate: steadyRate }, stackPids());
      say("waiting for the deliveries of the steady run");
      await drain();
      const lags = [];
      for (const [id, at] of answeredAt) if (received.createdAt.has(id)) lags.push(received.createdAt.get(id) - at);
      lags.sort((x, y) => x - y);
      results[name] = {
        rps: steadyRate,
        p50: lags[Math.floor(lags.length / 2)],
        p99: lags[Math.floor(lags.length * 0.99)],
        total: lags.length,
        errors: answeredAt.size - lags.length,
        rss_mb: {},
      };
    }
    await new Promise((r) => receiver.close(r));
    await mongo.close();
    // Seeding comes after the runs above: on the embedded engine every extra document slows every query.
    const { account } = await admin.createAccount({});
    const listKey = (await admin.createKey({ accountId: account.id, kind: proto.KeyKind.SECRET, livemode: false })).secret;
    const listTenant = { accountId: account.id, livemode: false };
    say(`seeding ${DEPTH + 100} resources for the deep page`);
    const seedStarted = Date.now();
    let next = 0;
    const seeded = [];
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < DEPTH + 100) {
          next++;
          const { resource } = await coreResources.createResource({ tenant: listTenant, name: `seed ${next}`, metadata: [{ key: "i", value: String(next) }] });
          seeded.push(resource.id);
        }
      }),
    );
    seedSeconds = (Date.now() - seedStarted) / 1000;
    // The cursor DEPTH items deep: ids sort newest first, and this account holds only the seeded ones.
    seeded.sort().reverse();
    const cursor = seeded[DEPTH - 1];
    // Pages are timed one request at a time: on the embedded engine a page costs seconds (see docs/performance.md).
    const page = async (name, url) => {
      say(`run ${name}`);
      const rss = sampleRss(stackPids());
      const times = [];
      for (let i = 0; i < LIST_REQUESTS; i++) {
        const t = performance.now();
        const body = await httpsJson("GET", url, ca, { authorization: `Bearer ${listKey}` });
        if (body.data.length !== 20) throw new Error(`${name}: ${body.data.length} items`);
        times.push(performance.now() - t);
      }
      times.sort((x, y) => x - y);
      const mean = times.reduce((x, y) => x + y, 0) / times.length;
      results[name] = { rps: 1000 / mean, p50: times[Math.floor(times.length / 2)], p99: times[times.length - 1], total: times.length, errors: 0, rss_mb: rss.stop() };
    };
    await page("list_page1", `${api}/v1/resources?limit=20`);
    await page("list_deep", `${api}/v1/resources?limit=20&starting_after=${cursor}`);
    // A list page under load in the account holding DEPTH + 100 resources, against baseline B.
    await http("list", `${api}/v1/resources?limit=20`, { headers: { authorization: `Bearer ${listKey}` } }, stackPids());
    // One resource updated UPDATES times through core: the first UPDATE_WINDOW updates against the last
    // (each waits for the one before, so a growing document or outbox would show as slower updates).
    say(`run ${UPDATES.toLocaleString("en")} updates of one resource`);
    {
      const rss = sampleRss(stackPids());
      const { resource } = await coreResources.createResource({ tenant: listTenant, name: "often updated" });
      const times = [];
      for (let i = 1; i <= UPDATES; i++) {
        const t = performance.now();
        await coreResources.updateResource({ tenant: listTenant, id: resource.id, metadata: [{ key: "n", value: String(i) }] });
        times.push(performance.now() - t);
      }
      const rssMb = rss.stop();
      const summary = (slice) => {
        const sorted = [...slice].sort((x, y) => x - y);
        const mean = sorted.reduce((x, y) => x + y, 0) / sorted.length;
        return { rps: 1000 / mean, p50: sorted[Math.floor(sorted.length / 2)], p99: sorted[Math.floor(sorted.length * 0.99)], total: sorted.length, errors: 0, rss_mb: rssMb };
      };
      results.update_first = summary(times.slice(0, UPDATE_WINDOW));
      results.update_last = summary(times.slice(-UPDATE_WINDOW));
    }
    echoClient.close();
    // The jobs rows (issue 14) on a stack of their own, so their raw baselines share its database.
    say("jobs: import, bulk update and retrieve during an import (scripts/bench-jobs.mjs)");
    const { benchJobs } = await import("./bench-jobs.mjs");
    const jobsBench = await benchJobs({ say, duration: DURATION });
    results.jobs = jobsBench.result;
    const breakdown = await coreBreakdown(coreMetricsPort);
    admin.close();
    coreResources.close();

    // ---- report
    const ratio = (x, y) => (y ? x / y : NaN);
    const rows = [
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
        check: "POST /v1/resources + Idempotency-Key vs B",
        rps: ratio(results.post.rps, results.baseline_b.rps),
        p99: ratio(results.post.p99, results.baseline_b.p99),
        target: "≥ 0.35 req/s",
        ok: ratio(results.post.rps, results.baseline_b.rps) >= 0.35,
        a: results.post,
        b: results.baseline_b,
      },
      {
        check: `list page ${DEPTH.toLocaleString("en")} deep vs page 1 (time)`,
        rps: ratio(results.list_page1.rps, results.list_deep.rps),
        p99: ratio(results.list_deep.p99, results.list_page1.p99),
        target: "≤ 1.2× time",
        ok: ratio(results.list_page1.rps, results.list_deep.rps) <= 1.2,
        a: results.list_deep,
        b: results.list_page1,
      },
      {
        check: `GET /v1/resources?limit=20 (account of ${(DEPTH + 100).toLocaleString("en")}) vs B`,
        rps: ratio(results.list.rps, results.baseline_b.rps),
        p99: ratio(results.list.p99, results.baseline_b.p99),
        target: "≥ 0.35 req/s",
        ok: ratio(results.list.rps, results.baseline_b.rps) >= 0.35,
        a: results.list,
        b: results.baseline_b,
      },
      {
        check: `update of one resource: last ${UPDATE_WINDOW} of ${UPDATES.toLocaleString("en")} vs first ${UPDATE_WINDOW} (time)`,
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
    const f0 = (x) => (!Number.isFinite(x) ? "n/a" : x < 10 ? x.toFixed(2) : Math.round(x).toLocaleString("en"));
    const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : "n/a");
    const abs = (r) => `${f0(r.rps)} req/s, p50 ${f2(r.p50)} ms, p99 ${f2(r.p99)} ms`;
    const machine = `${cpus().length} × ${cpus()[0]?.model?.trim() ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${CONNECTIONS} connections, ${DURATION} s per run (after ${WARMUP} s warm-up), loopback`;
    const lines = [
      `Run ${new Date().toISOString()} — ${machine}.`,
      "",
      "| check | ratio (req/s) | ratio (p99) | target | met | measured | against |",
      "|---|---|---|---|---|---|---|",
      ...rows.map((r) => `| ${r.check} | ${f2(r.rps)} | ${f2(r.p99)} | ${r.target} | ${r.ok === null ? "" : r.ok ? "yes" : "**no**"} | ${abs(r.a)} | ${abs(r.b)} |`),
      "",
      "| jobs check | ratio | target | met | measured | against |",
      "|---|---|---|---|---|---|",
      ...jobsBench.rows.map((r) => `| ${r.check} | ${f2(r.ratio)} | ${r.target} | ${r.ok === null ? "" : r.ok ? "yes" : "**no**"} | ${r.measured} | ${r.against} |`),
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
      `Seeding ${(DEPTH + 100).toLocaleString("en")} resources through core took ${seedSeconds.toFixed(1)} s; whole run ${Math.round((Date.now() - started) / 1000)} s.`,
    ];
    const markdown = lines.join("\n");
    process.stdout.write(`\n${markdown}\n`);
    const dir = join(root, "bench", "results");
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "latest.json"),
      `${JSON.stringify({ date: new Date().toISOString(), machine, connections: CONNECTIONS, durationSeconds: DURATION, depth: DEPTH, seedSeconds, results, coreBreakdown: breakdown, ratios: rows.map(({ a, b, ...r }) => r) }, null, 2)}\n`,
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
  } finally {
    await cleanup();
    await database?.stop();
  }
  // ---------------------------------------------------------------- helpers

  async function startRole(name, args) {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), name, ...args], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    await new Promise((resolve, reject) => {
      child.once("message", resolve);
      child.once("exit", (code) => reject(new Error(`${name} exited (${code})`)));
    });
    return child;
  }
}

/** Waits until the async `probe` answers true (looking every 100 ms), or throws after `timeoutMs`. */
async function eventually(probe, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The highest RSS each process reached in any run. */
function peakRss(results) {
  const peak = {};
  for (const r of Object.values(results)) for (const [p, mb] of Object.entries(r.rss_mb ?? {})) peak[p] = Math.max(peak[p] ?? 0, mb);
  return peak;
}

/** Mean seconds per gRPC method and per database command, from core's Prometheus text. */
async function coreBreakdown(port) {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const mean = (metric, label) => {
    const sums = {};
    for (const line of text.split("\n")) {
      const m = line.match(new RegExp(`^${metric}_(sum|count)\\{([^}]*)\\} (\\S+)$`));
      if (!m) continue;
      const name = m[2].match(new RegExp(`${label}="([^"]*)"`))?.[1];
      const okay = !m[2].includes('grpc_code="') || m[2].includes('grpc_code="OK"');
      if (!name || !okay) continue;
      sums[name] ??= { sum: 0, count: 0 };
      sums[name][m[1]] += Number(m[3]);
    }
    return Object.entries(sums)
      .filter(([, v]) => v.count > 0)
      .sort((x, y) => y[1].count - x[1].count)
      .map(([name, v]) => `${name.replace(/^\/rms\.v1\./, "")} ${((1000 * v.sum) / v.count).toFixed(2)} ms × ${v.count}`)
      .join(", ");
  };
  return { calls: mean("grpc_server_handling_seconds", "grpc_method"), commands: mean("mongodb_command_duration_seconds", "command") };
}

function freePorts(count) {
  return Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise((resolve, reject) => {
          const server = createNetServer();
          server.listen(0, "127.0.0.1", () => {
            const { port } = server.address();
            server.close(() => resolve(port));
          });
          server.on("error", reject);
        }),
    ),
  ).then((ports) => (new Set(ports).size === ports.length ? ports : freePorts(count)));
}

async function until(probe, timeoutMs, failed) {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    const why = failed?.();
    if (why) throw new Error(`the stack exited:\n${why}`);
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Direct children of a process (Linux /proc). */
function childPids(pid) {
  const out = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {}
  }
  return out;
}

/** Peak resident memory (MB) of each named process, sampled every 250 ms until `stop`. */
/** CPU time (user + system, ms) each process spends between start and stop, from /proc. */
function cpuMeter(pids) {
  const tick = 1000 / 100; // USER_HZ is 100 on Linux
  const read = () => {
    const times = {};
    for (const [name, pid] of Object.entries(pids)) {
      try {
        const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
        times[name] = (Number(fields[11]) + Number(fields[12])) * tick;
      } catch {}
    }
    return times;
  };
  const before = read();
  return {
    stop: () => {
      const after = read();
      return Object.fromEntries(
        Object.keys(after)
          .filter((n) => n in before)
          .map((n) => [n, after[n] - before[n]]),
      );
    },
  };
}

function sampleRss(pids) {
  const peak = {};
  const sample = () => {
    for (const [name, pid] of Object.entries(pids)) {
      try {
        const kb = Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)?.[1] ?? 0);
        peak[name] = Math.max(peak[name] ?? 0, Math.round(kb / 1024));
      } catch {}
    }
  };
  sample();
  const timer = setInterval(sample, 250);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** `concurrency` loops calling `call` back to back for `seconds`; throughput and latency percentiles. */
async function closedLoop(call, concurrency, seconds) {
  const latencies = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        try {
          await call();
          latencies.push(performance.now() - t);
        } catch {
          errors++;
        }
      }
    }),
  );
  latencies.sort((x, y) => x - y);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { rps: latencies.length / seconds, p50: at(0.5), p99: at(0.99), errors, total: latencies.length };
}

async function httpsJson(method, url, ca, headers, body) {
  const { request } = await import("node:https");
  return new Promise((resolve, reject) => {
    const req = request(url, { method, ca, headers }, (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => (res.statusCode < 300 ? resolve(JSON.parse(text)) : reject(new Error(`${method} ${url}: ${res.statusCode} ${text}`))));
    });
    req.on("error", reject);
    req.end(body);
  });
}
