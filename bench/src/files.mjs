#!/usr/bin/env node
// The files rows of `npm run bench` (issue 27, CONTRACT.md section 11), on a stack of their own (a database, core,
// gateway and one worker process), each against the database driver doing the same work by hand, in the same run:
//   upload:  POST /v1/files of BENCH_FILES_UPLOAD_MB (512) MiB, multipart, to its 201   vs the same bytes through the
//            driver's GridFSBucket.openUploadStream
//   import:  a BENCH_FILES_ROWS-row (1,000,000) JSONL file, POST /v1/jobs to succeeded    vs insertMany of the same
//            documents (core's, with their events, in batches of 10,000) into a collection of the bench's own
//   export:  the resources that import made, POST /v1/jobs to succeeded                  vs the driver's cursor over
//            them (id order) written to a file as JSON lines; and vs its floor, the same cursor and lines written
//            as chunk documents of core's layout, one per export part, majority and journaled (export-floor.mjs),
//            (every baseline and floor runs beside the same GET loop as the operation it is compared with)
//   for each: peak RSS of gateway, core and worker (sampled every 100 ms from /proc) vs their peak while idle (serving
//            only the other account's GET loop, as during each), and another account's GET /v1/resources/:id p99
//            while it runs vs idle; the same loop's p99 during the GridFS upload by hand too (the upload's floor:
//            what the database's own write of those bytes costs the other account).
// Run alone at a small size: `BENCH_FILES_ROWS=20000 BENCH_FILES_UPLOAD_MB=16 node bench/src/files.mjs` (after a build).
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { Agent } from "node:https";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { exportFloor } from "./export-floor.mjs";
import { resourceIndexes } from "./invariants.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const ROWS = Number(process.env.BENCH_FILES_ROWS ?? 1_000_000);
const UPLOAD_MB = Number(process.env.BENCH_FILES_UPLOAD_MB ?? 512);
const RAW_COLLECTION = "bench_raw_file_resources";

export async function benchFiles({ say = (l) => process.stderr.write(`bench-files: ${l}\n`) } = {}) {
  const { startDatabase } = await import("@rms/test-db");
  const { MongoClient, GridFSBucket } = await import("mongodb");
  const dist = (p) => import(pathToFileURL(join(root, p)).href);
  const { freePort, newTestKey, startCoreProcess, startGatewayProcess } = await dist("apps/cli/dist/stack/processes.js");
  const { startNodeChild } = await dist("apps/cli/dist/stack/children.js");
  const { workerNodeFlags } = await dist("apps/cli/dist/stack/heap.js");
  const { PublicApi } = await dist("apps/cli/dist/stack/public-api.js");
  const core = await dist("apps/core/dist/resources/batch.js");
  const { EXPORT_CHUNK } = await dist("apps/core/dist/jobs/runner/export.js");

  const dir = mkdtempSync(join(tmpdir(), "rms-bench-files-"));
  const database = await startDatabase({ dataDir: join(dir, "db"), env: { ...process.env, MONGODB_URI: "" } });
  const databaseName = "benchfiles";
  const mongo = await new MongoClient(database.uri).connect();
  const children = [];
  let api;
  let other;
  try {
    const corePort = await freePort();
    const gatewayPort = await freePort();
    const coreChild = await startCoreProcess({ mongoUri: database.uri, databaseName, port: corePort });
    children.push(coreChild);
    const gatewayChild = await startGatewayProcess({
      coreAddr: `127.0.0.1:${corePort}`,
      mongoUri: database.uri,
      databaseName,
      dataDir: dir,
      port: gatewayPort,
      env: {
        RATE_LIMIT_TEST: "100000000",
        RATE_LIMIT_LIVE: "100000000",
        RATE_LIMIT_ADDRESS: "100000000",
        FILES_MAX_BYTES: String(Math.max(UPLOAD_MB, 512) * 1024 * 1024),
      },
    });
    children.push(gatewayChild);
    // With the heap `rms start` gives a worker (WORKER_HEAP_MB).
    const workerChild = startNodeChild(
      "worker",
      join(root, "apps/core/dist/worker/main.js"),
      {
        MONGODB_URI: database.uri,
        MONGODB_DATABASE: databaseName,
        LOG_LEVEL: "warn",
        WORKER_METRICS_PORT: "0",
      },
      "inherit",
      workerNodeFlags(),
    );
    children.push(workerChild);
    const pids = { gateway: gatewayChild.process.pid, core: coreChild.process.pid, worker: workerChild.process.pid };
    // Whose CPU an operation (or its floor) took: the stack's processes, the database and this process (the client,
    // the GET loop, and the floors' driver work).
    const cpuPids = { ...pids, ...(database.pid ? { database: database.pid } : {}) };
    const { secret } = await newTestKey(`127.0.0.1:${corePort}`);
    const { secret: otherSecret } = await newTestKey(`127.0.0.1:${corePort}`);
    api = new PublicApi(dir, gatewayPort, secret);
    other = new PublicApi(dir, gatewayPort, otherSecret);
    const db = mongo.db(databaseName);
    const ca = readFileSync(join(dir, "tls", "cert.pem"));
    const agent = new Agent({ ca, keepAlive: true, maxSockets: 4 });
    const job = (body) => runJob(api, body);
    // Warm-up: a small upload, import and export through every layer.
    const warmFile = await upload({ port: gatewayPort, agent, key: secret, chunks: jsonlChunks(100, "warm"), filename: "warm.jsonl" });
    await job({ type: "resources.import", params: { file: warmFile.id } });
    await job({ type: "resources.export", params: {} });

    // Another account's GET, measured alone first; its p99 then measured during each operation.
    const one = await other.send("POST", "/v1/resources", { json: { name: "other account" } });
    const getLoop = (until) => latencies({ port: gatewayPort, agent, key: otherSecret, path: `/v1/resources/${one.id}`, until, concurrency: 4 });
    // Idle is the stack serving that GET loop and nothing else: each operation's row has the same loop beside it,
    // and a process's heap grows with the requests it serves alone (V8 collects lazily), so RSS before any load
    // would count the loop's own growth as the operation's. That quiet figure is kept as context.
    say("idle: another account's GET loop alone (15 s): its p99, and the peak RSS of gateway, core and worker");
    const quietRss = rssOf(pids);
    const idleSampler = peakRss(pids);
    const idleGet = await getLoop(sleepMs(15_000));
    const idleRss = idleSampler.stop();
    const during = async (label, work) => {
      say(label);
      // RSS before this operation too: what an earlier one left on a heap (not returned to the system) shows apart.
      const before = rssOf(pids);
      const cpu = cpuMeter(cpuPids);
      const sampler = peakRss(pids);
      const done = work();
      const get = await getLoop(
        done.then(
          () => undefined,
          () => undefined,
        ),
      );
      const value = await done;
      return { value, before, peak: sampler.stop(), getP99: p99(get), cpu: cpu.stop() };
    };

    // ---- upload vs GridFS
    const uploadBytes = UPLOAD_MB * 1024 * 1024;
    const uploaded = await during(`upload of ${UPLOAD_MB} MiB (POST /v1/files to 201)`, async () => {
      const t = performance.now();
      const file = await upload({ port: gatewayPort, agent, key: secret, chunks: paddingChunks(uploadBytes), filename: "big.jsonl" });
      return { ms: performance.now() - t, file };
    });
    if (uploaded.value.file.size !== uploadBytes) throw new Error(`uploaded ${uploaded.value.file.size} of ${uploadBytes} bytes`);
    // The upload's floor, with the same GET loop beside it as beside the upload: its time is the upload row's
    // baseline, its GET p99 shows what the database's own write of those bytes costs the other account.
    const gridfs = await during(`GridFS: the same ${UPLOAD_MB} MiB through GridFSBucket.openUploadStream`, () =>
      timed(async () => {
        const bucket = new GridFSBucket(db, { bucketName: "bench_gridfs", writeConcern: { w: "majority", j: true } });
        const stream = bucket.openUploadStream("big.jsonl");
        for (const chunk of paddingChunks(uploadBytes)) if (!stream.write(chunk)) await new Promise((r) => stream.once("drain", r));
        await new Promise((resolve, reject) => stream.end((error) => (error ? reject(error) : resolve())));
      }),
    );
    const gridMs = gridfs.value;

    // ---- import vs insertMany
    say(`upload of the ${ROWS}-row JSONL file (not measured)`);
    const rowsFile = await upload({ port: gatewayPort, agent, key: secret, chunks: jsonlChunks(ROWS, "bench"), filename: "rows.jsonl" });
    const imported = await during(`import of ${ROWS} rows from the file (POST to succeeded)`, () =>
      job({ type: "resources.import", params: { file: rowsFile.id } }),
    );
    if (imported.value.job.result.created !== ROWS) throw new Error(`import created ${imported.value.job.result.created} of ${ROWS}`);
    const raw = db.collection(RAW_COLLECTION);
    for (const { key, v, ns, ...options } of await resourceIndexes(db)) await raw.createIndex(key, options);
    const rawTenant = { account: `acct_benchfiles${process.pid}`, livemode: false };
    const nowMs = Date.now();
    // Every baseline runs beside the same GET loop as the operation it is compared with (the loop alone keeps both
    // cores busy): the time ratios compare like with like, and the loop's p99 beside a baseline is that row's floor.
    const rawInsert = await during(`raw insertMany of ${ROWS} documents (batches of 10,000, core's documents with their events, under core's indexes)`, () =>
      timed(async () => {
        for (let from = 0; from < ROWS; from += 10_000) {
          const docs = [];
          for (let i = from; i < Math.min(ROWS, from + 10_000); i++) {
            docs.push(
              core.importedResource(
                rawTenant,
                core.importedResourceId("job_benchfiles", i + 1, nowMs),
                { name: `bench-${i}`, status: "active", metadata: [{ k: "tag", v: "bench" }] },
                nowMs,
                {
                  requestId: null,
                  idempotencyKey: null,
                },
              ),
            );
          }
          await raw.insertMany(docs, { ordered: false });
        }
      }),
    );
    const rawInsertMs = rawInsert.value;

    // ---- export vs the driver's cursor to a file
    // The relay's backlog (resources whose events are not yet copied, by its partial index) before and after the
    // export: the import's events are still being copied while the export runs, on the same worker and database.
    const outboxBacklog = () => db.collection("resources").countDocuments({ "pending_events._id": { $exists: true } }, { hint: "pending_events" });
    const backlogBefore = await outboxBacklog();
    const exported = await during(`export of the ${ROWS} imported resources (POST to succeeded)`, () =>
      job({ type: "resources.export", params: { filter: { metadata: { tag: "bench" } } } }),
    );
    if (exported.value.job.result.exported !== ROWS) throw new Error(`export wrote ${exported.value.job.result.exported} of ${ROWS}`);
    const backlogAfter = await outboxBacklog();
    const exportParts = await db.collection("file_blob_chunks").countDocuments({ b: exported.value.job.result.file });
    const rawRows = () => raw.find({ account: rawTenant.account, livemode: false }, { projection: { pending_events: 0 } }).sort({ _id: 1 });
    const cursor = await during(`the driver's cursor over ${ROWS} documents (id order) written to a file as JSON lines`, () =>
      timed(async () => {
        const out = createWriteStream(join(dir, "cursor.jsonl"));
        for await (const doc of rawRows()) {
          const line = exportLine(doc);
          if (!out.write(line)) await new Promise((r) => out.once("drain", r));
        }
        await new Promise((r) => out.end(r));
      }),
    );
    const cursorMs = cursor.value;
    const floor = await during(`the export's floor: the same cursor and lines as chunk documents of ${EXPORT_CHUNK} rows (core's layout, majority)`, () =>
      exportFloor({ db, rows: rawRows(), line: exportLine, rowsPerChunk: EXPORT_CHUNK }),
    );
    if (floor.value.rows !== ROWS) throw new Error(`the export floor wrote ${floor.value.rows} of ${ROWS} rows`);

    const mib = (bytes) => bytes / 1024 / 1024;
    const growth = (peak, from = idleRss) => Object.fromEntries(Object.entries(peak).map(([name, bytes]) => [name, mib(bytes - from[name])]));
    const result = {
      rows: ROWS,
      upload_mib: UPLOAD_MB,
      idle_rss_mib: Object.fromEntries(Object.entries(idleRss).map(([n, b]) => [n, mib(b)])),
      quiet_rss_mib: Object.fromEntries(Object.entries(quietRss).map(([n, b]) => [n, mib(b)])),
      idle_get_p99_ms: p99(idleGet),
      upload: {
        ms: uploaded.value.ms,
        gridfs_ms: gridMs,
        ratio: uploaded.value.ms / gridMs,
        gridfs_get_p99_ms: gridfs.getP99,
        cpu_s: uploaded.cpu,
        gridfs_cpu_s: gridfs.cpu,
        rss_growth_mib: growth(uploaded.peak),
        rss_growth_from_start_mib: growth(uploaded.peak, uploaded.before),
        rss_growth_from_quiet_mib: growth(uploaded.peak, quietRss),
        get_p99_ms: uploaded.getP99,
      },
      import: {
        ms: imported.value.ms,
        raw_ms: rawInsertMs,
        ratio: imported.value.ms / rawInsertMs,
        cpu_s: imported.cpu,
        raw_cpu_s: rawInsert.cpu,
        raw_get_p99_ms: rawInsert.getP99,
        rss_growth_mib: growth(imported.peak),
        rss_growth_from_start_mib: growth(imported.peak, imported.before),
        rss_growth_from_quiet_mib: growth(imported.peak, quietRss),
        get_p99_ms: imported.getP99,
      },
      export: {
        ms: exported.value.ms,
        cursor_ms: cursorMs,
        ratio: exported.value.ms / cursorMs,
        parts: exportParts,
        relay_backlog_before: backlogBefore,
        relay_backlog_after: backlogAfter,
        floor_ms: floor.value.ms,
        floor_chunks: floor.value.chunks,
        floor_ratio: exported.value.ms / floor.value.ms,
        cpu_s: exported.cpu,
        floor_cpu_s: floor.cpu,
        cursor_cpu_s: cursor.cpu,
        cursor_get_p99_ms: cursor.getP99,
        floor_get_p99_ms: floor.getP99,
        rss_growth_mib: growth(exported.peak),
        rss_growth_from_start_mib: growth(exported.peak, exported.before),
        rss_growth_from_quiet_mib: growth(exported.peak, quietRss),
        get_p99_ms: exported.getP99,
      },
    };
    const n = ROWS.toLocaleString("en");
    const maxGrowth = (g) => Math.max(...Object.values(g));
    const growthText = (g) =>
      Object.entries(g)
        .map(([name, m]) => `${name} +${m.toFixed(1)}`)
        .join(", ");
    const rows = [
      {
        check: `import of ${n} JSONL rows from a file, POST to succeeded, vs insertMany of the same documents, both beside the other account's GET loop (time)`,
        ratio: result.import.ratio,
        target: "≤ 2× time",
        ok: result.import.ratio <= 2,
        measured: `${Math.round(result.import.ms)} ms (CPU s: ${cpuText(imported.cpu)})`,
        against: `${Math.round(rawInsertMs)} ms (CPU s: ${cpuText(rawInsert.cpu)})`,
      },
      {
        check: `export of ${n} resources, POST to succeeded, vs the driver's cursor written to a file, both beside the other account's GET loop (time)`,
        ratio: result.export.ratio,
        target: "≤ 1.5× time",
        ok: result.export.ratio <= 1.5,
        measured: `${Math.round(result.export.ms)} ms (CPU s: ${cpuText(exported.cpu)})`,
        against: `${Math.round(cursorMs)} ms (CPU s: ${cpuText(cursor.cpu)})`,
      },
      {
        check: `export of ${n} resources vs its floor, both beside the other account's GET loop: the same cursor and JSON lines written as chunk documents of core's layout, one per ${EXPORT_CHUNK} rows, majority and journaled (time; what the export's own machinery costs: a query, a lease renewal and a checkpoint per part, the read-back for the sha256, and the relay's catch-up it runs beside)`,
        ratio: result.export.floor_ratio,
        target: "(floor)",
        ok: null,
        measured: `${Math.round(result.export.ms)} ms, ${exportParts} parts (the relay's backlog, resources with events to copy: ${backlogBefore} at its start, ${backlogAfter} at its end)`,
        against: `${Math.round(floor.value.ms)} ms, ${floor.value.chunks} chunks (CPU s: ${cpuText(floor.cpu)})`,
      },
      {
        check:
          "the export's floor vs the driver's cursor written to a file, both beside the GET loop (time; what writing the bytes durably into the database costs over a local file)",
        ratio: floor.value.ms / cursorMs,
        target: "(floor)",
        ok: null,
        measured: `${Math.round(floor.value.ms)} ms (CPU s: ${cpuText(floor.cpu)})`,
        against: `${Math.round(cursorMs)} ms (CPU s: ${cpuText(cursor.cpu)})`,
      },
      {
        check: `upload of ${UPLOAD_MB} MiB (POST /v1/files) vs GridFSBucket.openUploadStream of the same bytes (time)`,
        ratio: result.upload.ratio,
        target: "(report)",
        ok: null,
        measured: `${Math.round(result.upload.ms)} ms`,
        against: `${Math.round(gridMs)} ms`,
      },
      ...[
        ["upload", result.upload],
        ["import", result.import],
        ["export", result.export],
      ].flatMap(([name, r]) => [
        {
          check: `peak RSS growth over idle (the GET loop alone) during the ${name} (MiB: gateway, core, worker)`,
          ratio: maxGrowth(r.rss_growth_mib) / 64,
          target: "≤ +64 MiB each",
          ok: maxGrowth(r.rss_growth_mib) <= 64,
          measured: growthText(r.rss_growth_mib),
          against: `idle (from the ${name}'s start: ${growthText(r.rss_growth_from_start_mib)}; from before any load: ${growthText(r.rss_growth_from_quiet_mib)})`,
        },
        {
          check: `another account's GET p99 during the ${name} vs idle`,
          ratio: r.get_p99_ms / result.idle_get_p99_ms,
          target: "≤ 1.5×",
          ok: r.get_p99_ms / result.idle_get_p99_ms <= 1.5,
          measured: `${r.get_p99_ms.toFixed(2)} ms`,
          against: `${result.idle_get_p99_ms.toFixed(2)} ms${
            name === "import"
              ? ` (beside insertMany by hand: ${r.raw_get_p99_ms.toFixed(2)} ms)`
              : name === "export"
                ? ` (beside the cursor to a file: ${r.cursor_get_p99_ms.toFixed(2)} ms; beside the floor: ${r.floor_get_p99_ms.toFixed(2)} ms)`
                : ""
          }`,
        },
        ...(name === "upload"
          ? [
              {
                check: `another account's GET p99 during the GridFS upload of the same ${UPLOAD_MB} MiB by hand vs idle (the upload's floor: what the database's own write of those bytes costs the other account)`,
                ratio: r.gridfs_get_p99_ms / result.idle_get_p99_ms,
                target: "(floor)",
                ok: null,
                measured: `${r.gridfs_get_p99_ms.toFixed(2)} ms (our upload: ${r.get_p99_ms.toFixed(2)} ms)`,
                against: `${result.idle_get_p99_ms.toFixed(2)} ms (CPU s during the GridFS upload: ${cpuText(r.gridfs_cpu_s)}; during ours: ${cpuText(r.cpu_s)})`,
              },
            ]
          : []),
      ]),
    ];
    agent.destroy();
    return { rows, result };
  } finally {
    api?.close();
    other?.close();
    for (const child of children.reverse()) await child.stop(10_000).catch(() => {});
    await mongo.close();
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A raw resource document as the export's JSONL line (the public resource object, fields in its order). */
function exportLine(doc) {
  return `${JSON.stringify({ id: doc._id, object: "resource", name: doc.name, status: doc.status, metadata: Object.fromEntries(doc.metadata.map((p) => [p.k, p.v])), created: doc.created })}\n`;
}

const sleepMs = (ms) => new Promise((r) => setTimeout(r, ms));

async function timed(work) {
  const t = performance.now();
  await work();
  return performance.now() - t;
}

/** `rows` JSONL rows, in chunks of about 1 MiB. */
/** POST /v1/jobs with `body`, then its GET every `pollMs` until it ends; throws unless it succeeded. Its time and the job. */
export async function runJob(api, body, pollMs = 100) {
  const t = performance.now();
  const created = await api.send("POST", "/v1/jobs", { json: body });
  for (;;) {
    const current = await api.send("GET", `/v1/jobs/${created.id}`);
    if (["succeeded", "failed", "canceled"].includes(current.status)) {
      if (current.status !== "succeeded") throw new Error(`job ${created.id} ${current.status}: ${current.failure_code} ${current.failure_message}`);
      return { ms: performance.now() - t, job: current };
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

export function* jsonlChunks(rows, tag) {
  let lines = [];
  let bytes = 0;
  for (let i = 0; i < rows; i++) {
    const line = `{"name":"${tag}-${i}","metadata":{"tag":"${tag}"}}\n`;
    lines.push(line);
    bytes += line.length;
    if (bytes >= 1 << 20) {
      yield Buffer.from(lines.join(""));
      lines = [];
      bytes = 0;
    }
  }
  if (lines.length > 0) yield Buffer.from(lines.join(""));
}

/** `total` bytes of JSONL-looking text, in chunks of 1 MiB (one buffer reused). */
export function* paddingChunks(total) {
  const line = `${JSON.stringify({ name: "x".repeat(100) })}\n`;
  const piece = Buffer.from(line.repeat(Math.ceil((1 << 20) / line.length))).subarray(0, 1 << 20);
  for (let sent = 0; sent < total; sent += piece.length) yield piece.subarray(0, Math.min(piece.length, total - sent));
}

/** POST /v1/files with a multipart body streamed from `chunks`, as curl -F sends it; the file object. */
export function upload({ port, agent, key, chunks, filename }) {
  const boundary = `----rms-bench-${Date.now()}`;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: "/v1/files",
        method: "POST",
        agent,
        headers: { authorization: `Bearer ${key}`, "content-type": `multipart/form-data; boundary=${boundary}` },
      },
      (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => (res.statusCode === 201 ? resolve(JSON.parse(body)) : reject(new Error(`upload: ${res.statusCode} ${body.slice(0, 300)}`))));
      },
    );
    req.on("error", reject);
    (async () => {
      const write = (b) => (req.write(b) ? Promise.resolve() : new Promise((r) => req.once("drain", r)));
      await write(`--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nresources_import\r\n`);
      await write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/x-ndjson\r\n\r\n`);
      for (const chunk of chunks) await write(chunk);
      req.end(`\r\n--${boundary}--\r\n`);
    })().catch(reject);
  });
}

/** GET latencies (ms) with `concurrency` loops until `until` resolves. */
async function latencies({ port, agent, key, path, until, concurrency }) {
  let done = false;
  until.then(() => (done = true));
  const samples = [];
  const one = () =>
    new Promise((resolve) => {
      const t = performance.now();
      const req = request({ host: "127.0.0.1", port, path, agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
        res.resume();
        res.on("end", () => {
          samples.push(performance.now() - t);
          resolve();
        });
      });
      req.on("error", () => resolve());
      req.end();
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!done) await one();
    }),
  );
  return samples;
}

/** CPU seconds (user and system) each process of `pids` and this one used from now until `stop()`. */
function cpuMeter(pids) {
  const read = () => ({
    ...Object.fromEntries(
      Object.entries(pids).map(([name, pid]) => {
        const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
        return [name, (Number(fields[11]) + Number(fields[12])) / 100];
      }),
    ),
    bench: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
  });
  const start = read();
  return { stop: () => Object.fromEntries(Object.entries(read()).map(([name, s]) => [name, s - start[name]])) };
}

const cpuText = (cpu) =>
  Object.entries(cpu)
    .map(([name, s]) => `${name} ${s.toFixed(1)}`)
    .join(", ");

function p99(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? NaN;
}

export function rssOf(pids) {
  return Object.fromEntries(
    Object.entries(pids).map(([name, pid]) => {
      const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
      return [name, kb * 1024];
    }),
  );
}

/** The peak RSS of each process, sampled every 100 ms until `stop()`. */
export function peakRss(pids) {
  const peak = rssOf(pids);
  const timer = setInterval(() => {
    for (const [name, bytes] of Object.entries(rssOf(pids))) peak[name] = Math.max(peak[name], bytes);
  }, 100);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  // Run alone, the rows are also kept in bench/results/files.{json,md} (the full bench puts them in latest.*).
  const { rows, result } = await benchFiles();
  const table = [
    `Run ${new Date().toISOString()}, ${ROWS.toLocaleString("en")} rows, ${UPLOAD_MB} MiB upload, load average at the end ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}.`,
    "",
    "| files check | ratio | target | met | measured | against |",
    "|---|---|---|---|---|---|",
    ...rows.map((r) => `| ${r.check} | ${r.ratio.toFixed(2)} | ${r.target} | ${r.ok === null ? "" : r.ok ? "yes" : "**no**"} | ${r.measured} | ${r.against} |`),
  ].join("\n");
  const out = join(root, "bench", "results");
  writeFileSync(
    join(out, "files.json"),
    `${JSON.stringify({ date: new Date().toISOString(), rows: ROWS, uploadMiB: UPLOAD_MB, result, checks: rows }, null, 2)}\n`,
  );
  writeFileSync(join(out, "files.md"), `# Files rows (bench/src/files.mjs run alone)\n\n${table}\n`);
  process.stdout.write(`${table}\n`);
  process.exit(0);
}
