#!/usr/bin/env node
// The jobs rows of `npm run bench` (issue 14), on a stack of their own: a database, core, gateway and one worker
// process, so the raw baselines run on the same database as the jobs, in the same run.
//   import:   POST /v1/jobs of 10,000 items until `succeeded`   vs one raw insertMany of the same documents
//   import of BENCH_JOB_ITEMS_LARGE (100,000): that many items in jobs of 10,000 (a job's most) posted at once, until
//             the last has `succeeded`                            vs one raw insertMany of as many documents
//   update:   a bulk update of those 10,000 until `succeeded`    vs one raw updateMany of 10,000 documents
//   retrieve: GET /v1/resources/:id req/s while an import runs  vs the same without
// The jobs are made and followed through the public API; the raw baselines write a collection of the bench's own
// (core's documents, under core's resources indexes). Run alone: `node bench/src/jobs.mjs` (after a build).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { resourceIndexes, resourcesWithPendingEvents } from "./invariants.mjs";
import { outboxFloor } from "./outbox-floor.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const ITEMS = Number(process.env.BENCH_JOB_ITEMS ?? 10_000);
/** The large import (0: not run), in jobs of at most IMPORT_ITEMS_MAX (10,000) items each. */
const LARGE_ITEMS = Number(process.env.BENCH_JOB_ITEMS_LARGE ?? 100_000);
/** The raw baselines' own collections. */
const RAW_COLLECTION = "bench_raw_resources";
const RAW_EVENTS_COLLECTION = "bench_raw_events";

export async function benchJobs({ say = (l) => process.stderr.write(`bench-jobs: ${l}\n`), duration = 5 } = {}) {
  const { startDatabase } = await import("@rms/test-db");
  const { MongoClient } = await import("mongodb");
  const { default: autocannon } = await import("autocannon");
  const { freePort, newTestKey, startCoreProcess, startGatewayProcess, startNodeChild, PublicApi, workerNodeFlags } = await import("@rms/cli/stack");
  const core = await import("@rms/core/bench");

  const dir = mkdtempSync(join(tmpdir(), "rms-bench-jobs-"));
  const database = await startDatabase({ dataDir: join(dir, "db"), env: { ...process.env, MONGODB_URI: "" } });
  const databaseName = "benchjobs";
  const children = [];
  const mongo = await new MongoClient(database.uri).connect();
  let api;
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
      startNodeChild(
        "worker",
        join(root, "apps/core/dist/worker/main.js"),
        {
          MONGODB_URI: database.uri,
          MONGODB_DATABASE: databaseName,
          LOG_LEVEL: "warn",
          WORKER_METRICS_PORT: "0",
          // BENCH_PROFILE=1: a CPU profile of the worker (written when it stops) into bench/results/profiles/.
          ...(process.env.BENCH_PROFILE === "1" ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${join(root, "bench", "results", "profiles")}` } : {}),
        },
        // With the heap `rms start` gives a worker (WORKER_HEAP_MB).
        "inherit",
        workerNodeFlags(),
      ),
    );
    const { accountId, secret } = await newTestKey(`127.0.0.1:${corePort}`);
    api = new PublicApi(dir, gatewayPort, secret);
    const db = mongo.db(databaseName);
    const ca = readFileSync(join(dir, "tls", "cert.pem"));
    // POST through the API, then followed by list queries that stay empty (and cheap) until the job leaves
    // `queued` and until it ends, every `pollMs`; `GET /v1/jobs/:id` would carry the job's params (10,000 items)
    // each time, so it is read once, at the end.
    const runJob = async (body, pollMs = 20) => {
      const t = performance.now();
      const created = await api.send("POST", "/v1/jobs", { json: body });
      const postMs = performance.now() - t;
      let startedMs = null;
      const end = await api.jobEnd(created, { pollMs, timeoutMs: 30 * 60_000, started: () => (startedMs = performance.now() - t) });
      const ms = performance.now() - t;
      const job = await api.send("GET", `/v1/jobs/${created.id}`);
      if (end !== "succeeded") throw new Error(`job ${created.id} ${job.status}: ${job.failure_code} ${job.failure_message} attempts ${job.attempts}`);
      return { ms, postMs, startedMs, job };
    };
    const items = (tag) => Array.from({ length: ITEMS }, (_, i) => ({ name: `${tag}-${i}`, metadata: { tag } }));
    // Warm-up: a small job through every layer.
    await runJob({ type: "resources.import", params: { items: items("warm").slice(0, 100) } });

    // ---- raw baselines on the same database: the documents an import writes (with their events), into the
    // bench's own collection under the same indexes as core's
    const raw = db.collection(RAW_COLLECTION);
    const indexes = await resourceIndexes(db);
    if (indexes.length === 0) throw new Error("core's resources collection has no indexes to copy");
    for (const { key, v, ns, ...options } of indexes) await raw.createIndex(key, options);
    say(`raw insertMany of ${ITEMS} resources (into ${RAW_COLLECTION}, under core's ${indexes.length} resources indexes)`);
    const baseTenant = { account: `acct_benchraw${process.pid}`, livemode: false };
    const nowMs = Date.now();
    const docs = items("raw").map((item, i) =>
      core.importedResource(
        baseTenant,
        core.importedResourceId("job_raw", i, nowMs),
        { name: item.name, status: "active", metadata: [{ k: "tag", v: "raw" }] },
        nowMs,
        {
          requestId: null,
          idempotencyKey: null,
        },
      ),
    );
    let t = performance.now();
    await raw.insertMany(docs, { ordered: false });
    const rawInsertMs = performance.now() - t;
    // The outbox floor (outbox-floor.mjs): the same inserts' events copied into `events` and pulled, by hand.
    const floor = await outboxFloor({ client: mongo, db, raw, eventsName: RAW_EVENTS_COLLECTION });
    say(`outbox floor: the relay's work over those ${ITEMS} resources, by hand`);
    const importFloorMs = rawInsertMs + (await floor.relayed(docs.map((d) => d._id)));
    // The floor with the events written in the same batch as the resources (one transaction per chunk), on another tenant's copies.
    const togetherTenant = { account: `acct_benchtogether${process.pid}`, livemode: false };
    const togetherDocs = items("together").map((item, i) =>
      core.importedResource(
        togetherTenant,
        core.importedResourceId("job_together", i, nowMs),
        { name: item.name, status: "active", metadata: [{ k: "tag", v: "raw" }] },
        nowMs,
        {
          requestId: null,
          idempotencyKey: null,
        },
      ),
    );
    say(`floor with the events in the same batch: ${ITEMS} resources and their events, a transaction per ${1_000}`);
    const importTogetherMs = await floor.together(togetherDocs);
    const rawLarge = async () => {
      const tenant = { account: `acct_benchrawlarge${process.pid}`, livemode: false };
      const many = Array.from({ length: LARGE_ITEMS }, (_, i) =>
        core.importedResource(
          tenant,
          core.importedResourceId("job_rawlarge", i, nowMs),
          { name: `raw-${i}`, status: "active", metadata: [{ k: "tag", v: "raw" }] },
          nowMs,
          {
            requestId: null,
            idempotencyKey: null,
          },
        ),
      );
      say(`raw insertMany of ${LARGE_ITEMS} resources`);
      const started = performance.now();
      await raw.insertMany(many, { ordered: false });
      const insertMs = performance.now() - started;
      say(`outbox floor: the relay's work over those ${LARGE_ITEMS} resources, by hand`);
      return { insertMs, floorMs: insertMs + (await floor.relayed(many.map((d) => d._id))) };
    };
    const { insertMs: rawLargeMs, floorMs: largeFloorMs } = LARGE_ITEMS > 0 ? await rawLarge() : { insertMs: NaN, floorMs: NaN };
    say(`raw updateMany of ${ITEMS} resources`);
    t = performance.now();
    await raw.updateMany({ account: baseTenant.account }, { $set: { status: "paused" }, $inc: { version: 1 } });
    const rawUpdateMs = performance.now() - t;
    say(
      `outbox floor: a bulk update of ${ITEMS} resources by hand, its status and metadata changed as the job's (one read, core's decisions, one bulk write, the relay's work)`,
    );
    const updateFloor = await floor.update(baseTenant, { status: "active", metadata: [{ k: "step", v: "1" }] });
    if (updateFloor.changed !== ITEMS) throw new Error(`the update floor changed ${updateFloor.changed} of ${ITEMS}`);
    say(
      `floor with the events in the same batch: a bulk update of ${ITEMS} resources by hand (one read, core's decisions, a transaction per 1,000 of updates and events)`,
    );
    const updateTogether = await floor.updateTogether(togetherTenant, { status: "paused", metadata: [{ k: "step", v: "1" }] });
    if (updateTogether.changed !== ITEMS) throw new Error(`the update floor (together) changed ${updateTogether.changed} of ${ITEMS}`);

    // ---- the jobs, end to end through the public API
    say(`import of ${ITEMS} items (POST to succeeded)`);
    const imported = await runJob({ type: "resources.import", params: { items: items("bench") } });
    say(`bulk update of ${ITEMS} (POST to succeeded)`);
    const updated = await runJob({
      type: "resources.bulk_update",
      params: { filter: { metadata: { tag: "bench" } }, update: { status: "paused", metadata: { step: "1" } } },
    });

    // The large import: its jobs posted at once (each at most 10,000 items), timed to the last one's `succeeded`.
    let large = null;
    if (LARGE_ITEMS > 0) {
      say(`import of ${LARGE_ITEMS} items in jobs of 10,000 (POST to the last succeeded)`);
      const t0 = performance.now();
      const parts = Array.from({ length: Math.ceil(LARGE_ITEMS / 10_000) }, (_, p) =>
        Array.from({ length: Math.min(10_000, LARGE_ITEMS - p * 10_000) }, (_, i) => ({ name: `large-${p}-${i}`, metadata: { tag: "large" } })),
      );
      const posted = await Promise.all(parts.map((part) => api.send("POST", "/v1/jobs", { json: { type: "resources.import", params: { items: part } } })));
      for (const job of posted) {
        const end = await api.jobEnd(job, { pollMs: 200, timeoutMs: 60 * 60_000 });
        if (end !== "succeeded") throw new Error(`large import job ${job.id}: ${end}`);
      }
      large = { ms: performance.now() - t0, jobs: posted.length };
    }

    // ---- retrieve req/s with and without an import running
    const one = await api.send("POST", "/v1/resources", { json: { name: "retrieve me" } });
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
    // Followed at a slower pace, so its polls weigh little on the retrieves measured meanwhile.
    const during = runJob({ type: "resources.import", params: { items: items("during") } }, 200);
    const busy = await retrieve();
    const background = await during;
    const pendingAfter = await resourcesWithPendingEvents(db, accountId);
    const result = {
      import: {
        job_ms: imported.ms,
        post_ms: imported.postMs,
        claimed_after_ms: imported.startedMs,
        raw_ms: rawInsertMs,
        ratio: imported.ms / rawInsertMs,
        floor_ms: importFloorMs,
        floor_together_ms: importTogetherMs,
        created: imported.job.result.created,
      },
      update: {
        job_ms: updated.ms,
        post_ms: updated.postMs,
        claimed_after_ms: updated.startedMs,
        raw_ms: rawUpdateMs,
        ratio: updated.ms / rawUpdateMs,
        floor_ms: updateFloor.ms,
        floor_write_ms: updateFloor.writeMs,
        floor_relay_ms: updateFloor.relayMs,
        floor_together_ms: updateTogether.ms,
        updated: updated.job.result.updated,
      },
      import_large: large && {
        items: LARGE_ITEMS,
        jobs: large.jobs,
        job_ms: large.ms,
        raw_ms: rawLargeMs,
        ratio: large.ms / rawLargeMs,
        floor_ms: largeFloorMs,
      },
      retrieve: { idle, during_import: busy, ratio: busy.rps / idle.rps, import_ms: background.ms },
      resources_with_pending_events_at_end: pendingAfter,
    };
    const f = (x) => x.toFixed(2);
    const rows = [
      {
        check: `import of ${ITEMS.toLocaleString("en")} items, POST to succeeded, vs raw insertMany (time)`,
        ratio: result.import.ratio,
        target: "≤ 1.3× time",
        ok: result.import.ratio <= 1.3,
        measured: `${Math.round(imported.ms)} ms`,
        against: `${Math.round(rawInsertMs)} ms`,
      },
      ...(large
        ? [
            {
              check: `import of ${LARGE_ITEMS.toLocaleString("en")} items (${large.jobs} jobs posted at once), POST to the last succeeded, vs raw insertMany (time)`,
              ratio: result.import_large.ratio,
              target: "≤ 1.3× time",
              ok: result.import_large.ratio <= 1.3,
              measured: `${Math.round(large.ms)} ms`,
              against: `${Math.round(rawLargeMs)} ms`,
            },
          ]
        : []),
      {
        check: `bulk update of ${ITEMS.toLocaleString("en")}, POST to succeeded, vs raw updateMany (time)`,
        ratio: result.update.ratio,
        target: "≤ 2× time",
        ok: result.update.ratio <= 2,
        measured: `${Math.round(updated.ms)} ms`,
        against: `${Math.round(rawUpdateMs)} ms`,
      },
      {
        check: `import of ${ITEMS.toLocaleString("en")} items vs its outbox floor (the same inserts, then their events copied into events and pulled, by hand)`,
        ratio: imported.ms / importFloorMs,
        target: "(context)",
        ok: null,
        measured: `${Math.round(imported.ms)} ms`,
        against: `${Math.round(importFloorMs)} ms`,
      },
      ...(large
        ? [
            {
              check: `import of ${LARGE_ITEMS.toLocaleString("en")} items vs its outbox floor`,
              ratio: large.ms / largeFloorMs,
              target: "(context)",
              ok: null,
              measured: `${Math.round(large.ms)} ms`,
              against: `${Math.round(largeFloorMs)} ms`,
            },
          ]
        : []),
      {
        check: `bulk update of ${ITEMS.toLocaleString("en")} vs its outbox floor (one read, core's decisions, one bulk write of the versioned updates with their events, then the relay's work, by hand)`,
        ratio: updated.ms / updateFloor.ms,
        target: "(context)",
        ok: null,
        measured: `${Math.round(updated.ms)} ms`,
        against: `${Math.round(updateFloor.ms)} ms (writes ${Math.round(updateFloor.writeMs)}, relay ${Math.round(updateFloor.relayMs)})`,
      },
      {
        check: `import of ${ITEMS.toLocaleString("en")} items vs its floor with the events in the same batch (a transaction per 1,000 inserting the resources and their events, by hand)`,
        ratio: imported.ms / importTogetherMs,
        target: "(context)",
        ok: null,
        measured: `${Math.round(imported.ms)} ms`,
        against: `${Math.round(importTogetherMs)} ms`,
      },
      {
        check: `bulk update of ${ITEMS.toLocaleString("en")} vs its floor with the events in the same batch (one read, core's decisions, a transaction per 1,000 of the updates and their events, by hand)`,
        ratio: updated.ms / updateTogether.ms,
        target: "(context)",
        ok: null,
        measured: `${Math.round(updated.ms)} ms`,
        against: `${Math.round(updateTogether.ms)} ms`,
      },
      {
        check: "floors with the events in the same batch vs raw insertMany and raw updateMany (what an event per change costs the database that way)",
        ratio: importTogetherMs / rawInsertMs,
        target: "(context)",
        ok: null,
        measured: `import ${(importTogetherMs / rawInsertMs).toFixed(2)}×, update ${(updateTogether.ms / rawUpdateMs).toFixed(2)}×`,
        against: `${Math.round(rawInsertMs)} ms, ${Math.round(rawUpdateMs)} ms`,
      },
      {
        check: "outbox floor of the import of 10,000 vs raw insertMany; of the bulk update vs raw updateMany (what the outbox rule costs the database)",
        ratio: importFloorMs / rawInsertMs,
        target: "(context)",
        ok: null,
        measured: `import ${(importFloorMs / rawInsertMs).toFixed(2)}×, update ${(updateFloor.ms / rawUpdateMs).toFixed(2)}×`,
        against: `${Math.round(rawInsertMs)} ms, ${Math.round(rawUpdateMs)} ms`,
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
    api?.close();
    for (const child of children.reverse()) await child.stop(10_000).catch(() => {});
    await mongo.close();
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  // Alone: bench/results/jobs.{json,md}, with the load average at the start and at the end (a shared machine).
  const { writeFileSync } = await import("node:fs");
  const { loadavg } = await import("node:os");
  const loadAtStart = loadavg()[0];
  const started = new Date().toISOString();
  const { rows, result } = await benchJobs();
  const table = rows.map(
    (r) => `| ${r.check} | ${r.ratio.toFixed(2)} | ${r.target} | ${r.ok === null ? "" : r.ok ? "yes" : "**no**"} | ${r.measured} | ${r.against} |`,
  );
  const md = [
    "# The jobs rows alone (`node bench/src/jobs.mjs`)",
    "",
    `Measured ${started}; 1-minute load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end.`,
    "",
    "| jobs check | ratio | target | met | measured | against |",
    "|---|---|---|---|---|---|",
    ...table,
    "",
  ].join("\n");
  const out = join(root, "bench", "results");
  writeFileSync(join(out, "jobs.json"), `${JSON.stringify({ started, load_at_start: loadAtStart, load_at_end: loadavg()[0], result }, null, 2)}\n`);
  writeFileSync(join(out, "jobs.md"), md);
  process.stdout.write(md);
  process.exit(0);
}
