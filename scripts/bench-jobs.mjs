#!/usr/bin/env node
// The jobs rows of `npm run bench` (issue 14), on a stack of their own: a database, core, gateway and one
// worker process, so the raw baselines run on the same database as the jobs, in the same run.
//   import:  POST /v1/jobs of 10,000 items until `succeeded`   vs one raw insertMany of the same documents
//   update:  a bulk update of those 10,000 until `succeeded`    vs one raw updateMany of 10,000 documents
//   retrieve: GET /v1/resources/:id req/s while an import runs  vs the same without
// Run alone: `node scripts/bench-jobs.mjs` (after a build); bench.mjs imports `benchJobs`.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const ITEMS = Number(process.env.BENCH_JOB_ITEMS ?? 10_000);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function benchJobs({ say = (l) => process.stderr.write(`bench-jobs: ${l}\n`), duration = 5 } = {}) {
  const { startDatabase } = await import("@rms/test-db");
  const { MongoClient } = await import("mongodb");
  const { default: autocannon } = await import("autocannon");
  const stackUrl = (p) => pathToFileURL(join(root, "apps/cli/dist/stack", p)).href;
  const { freePort, httpsCall, newTestKey, startCoreProcess, startGatewayProcess } = await import(stackUrl("processes.js"));
  const { startNodeChild } = await import(stackUrl("children.js"));
  const core = await import(pathToFileURL(join(root, "apps/core/dist/resources/batch.js")).href);

  const dir = mkdtempSync(join(tmpdir(), "rms-bench-jobs-"));
  const database = await startDatabase({ dataDir: join(dir, "db"), env: { ...process.env, MONGODB_URI: "" } });
  const databaseName = "benchjobs";
  const children = [];
  const mongo = await new MongoClient(database.uri).connect();
  try {
    const corePort = await freePort();
    const gatewayPort = await freePort();
    children.push(await startCoreProcess({ mongoUri: database.uri, databaseName, port: corePort }));
    children.push(
      await startGatewayProcess({
        coreAddr: `127.0.0.1:${corePort}`,
        mongoUri: database.uri,
        databaseName,
        dataDir: dir,
        port: gatewayPort,
        env: { RATE_LIMIT_TEST: "100000000", RATE_LIMIT_LIVE: "100000000", RATE_LIMIT_ADDRESS: "100000000" },
      }),
    );
    children.push(
      startNodeChild("worker", join(root, "apps/core/dist/worker/main.js"), {
        MONGODB_URI: database.uri,
        MONGODB_DATABASE: databaseName,
        LOG_LEVEL: "warn",
        WORKER_METRICS_PORT: "0",
        // BENCH_PROFILE=1: a CPU profile of the worker (written when it stops) into bench/results/profiles/.
        ...(process.env.BENCH_PROFILE === "1" ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${join(root, "bench", "results", "profiles")}` } : {}),
      }),
    );
    const { accountId, secret } = await newTestKey(`127.0.0.1:${corePort}`);
    const db = mongo.db(databaseName);
    const resources = db.collection("resources");
    const ca = readFileSync(join(dir, "tls", "cert.pem"));
    const call = (method, path, body) =>
      httpsCall(dir, gatewayPort, method, path, { key: secret, ...(body ? { form: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}) });
    // POST through the API, then the job's status read from the database (one small field, fifty times a
    // second): polling GET /v1/jobs/:id would load the API with the job's params (10,000 items) each time.
    const jobs = db.collection("jobs");
    const runJob = async (body) => {
      const t = performance.now();
      const created = await call("POST", "/v1/jobs", body);
      if (created.status !== 201) throw new Error(`POST /v1/jobs: ${created.status} ${created.body}`);
      const postMs = performance.now() - t;
      const { id } = JSON.parse(created.body);
      let startedMs = null;
      for (;;) {
        const job = await jobs.findOne({ _id: id }, { projection: { status: 1, error: 1, attempts: 1, result: 1 } });
        if (startedMs === null && job.status !== "queued") startedMs = performance.now() - t;
        if (job.status === "succeeded") return { ms: performance.now() - t, postMs, startedMs, job };
        if (job.status === "failed" || job.status === "canceled") throw new Error(`job ${id} ${job.status}: ${JSON.stringify(job.error)} attempts ${job.attempts}`);
        await sleep(20);
      }
    };
    const items = (tag) => Array.from({ length: ITEMS }, (_, i) => ({ name: `${tag}-${i}`, metadata: { tag } }));
    // Warm-up: a small job through every layer.
    await runJob({ type: "resources.import", params: { items: items("warm").slice(0, 100) } });

    // ---- raw baselines on the same database: the same documents an import writes (with their events)
    say(`raw insertMany of ${ITEMS} resources`);
    const baseTenant = { account: `acct_benchraw${process.pid}`, livemode: false };
    const nowMs = Date.now();
    const docs = items("raw").map((item, i) =>
      core.importedResource(baseTenant, core.importedResourceId("job_raw", i, nowMs), { name: item.name, status: "active", metadata: [{ k: "tag", v: "raw" }] }, nowMs, {
        requestId: null,
        idempotencyKey: null,
      }),
    );
    let t = performance.now();
    await resources.insertMany(docs, { ordered: false });
    const rawInsertMs = performance.now() - t;
    say(`raw updateMany of ${ITEMS} resources`);
    t = performance.now();
    await resources.updateMany({ account: baseTenant.account }, { $set: { status: "paused" }, $inc: { version: 1 } });
    const rawUpdateMs = performance.now() - t;

    // ---- the jobs, end to end through the public API
    say(`import of ${ITEMS} items (POST to succeeded)`);
    const imported = await runJob({ type: "resources.import", params: { items: items("bench") } });
    say(`bulk update of ${ITEMS} (POST to succeeded)`);
    const updated = await runJob({ type: "resources.bulk_update", params: { filter: { metadata: { tag: "bench" } }, update: { status: "paused", metadata: { step: "1" } } } });

    // ---- retrieve req/s with and without an import running
    const one = JSON.parse((await call("POST", "/v1/resources", { name: "retrieve me" })).body);
    const retrieve = async () => {
      const r = await autocannon({
        url: `https://127.0.0.1:${gatewayPort}/v1/resources/${one.id}`,
        connections: 16,
        duration,
        tlsOptions: { ca },
        headers: { authorization: `Bearer ${secret}` },
      });
      return { rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx };
    };
    say("retrieve without an import");
    const idle = await retrieve();
    say("retrieve while an import runs");
    const during = runJob({ type: "resources.import", params: { items: items("during") } });
    const busy = await retrieve();
    const background = await during;
    const pendingAfter = await resources.countDocuments({ account: accountId, "pending_events.0": { $exists: true } });
    const result = {
      import: {
        job_ms: imported.ms,
        post_ms: imported.postMs,
        claimed_after_ms: imported.startedMs,
        raw_ms: rawInsertMs,
        ratio: imported.ms / rawInsertMs,
        created: imported.job.result.created,
      },
      update: {
        job_ms: updated.ms,
        post_ms: updated.postMs,
        claimed_after_ms: updated.startedMs,
        raw_ms: rawUpdateMs,
        ratio: updated.ms / rawUpdateMs,
        updated: updated.job.result.updated,
      },
      retrieve: { idle, during_import: busy, ratio: busy.rps / idle.rps, import_ms: background.ms },
      resources_with_pending_events_at_end: pendingAfter,
    };
    const f = (x) => x.toFixed(2);
    const rows = [
      {
        check: `import of ${ITEMS.toLocaleString("en")} items, POST to succeeded, vs raw insertMany (time)`,
        ratio: result.import.ratio,
        target: "≤ 2× time",
        ok: result.import.ratio <= 2,
        measured: `${Math.round(imported.ms)} ms`,
        against: `${Math.round(rawInsertMs)} ms`,
      },
      {
        check: `bulk update of ${ITEMS.toLocaleString("en")}, POST to succeeded, vs raw updateMany (time)`,
        ratio: result.update.ratio,
        target: "≤ 3× time",
        ok: result.update.ratio <= 3,
        measured: `${Math.round(updated.ms)} ms`,
        against: `${Math.round(rawUpdateMs)} ms`,
      },
      {
        check: "GET /v1/resources/:id while an import runs vs without (req/s)",
        ratio: result.retrieve.ratio,
        target: "(report)",
        ok: null,
        measured: `${Math.round(busy.rps)} req/s, p99 ${f(busy.p99)} ms`,
        against: `${Math.round(idle.rps)} req/s, p99 ${f(idle.p99)} ms`,
      },
    ];
    return { rows, result };
  } finally {
    for (const child of children.reverse()) await child.stop(10_000).catch(() => {});
    await mongo.close();
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { rows, result } = await benchJobs();
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  for (const r of rows)
    process.stdout.write(`| ${r.check} | ${r.ratio.toFixed(2)} | ${r.target} | ${r.ok === null ? "" : r.ok ? "yes" : "**no**"} | ${r.measured} | ${r.against} |\n`);
  process.exit(0);
}
