#!/usr/bin/env node
// Where the files rows' RSS goes (docs/performance.md, "Files: memory"): on demand, not part of `npm run bench`.
// A stack of its own (database, core, gateway, one worker), nothing else running on it: an upload of a
// MEMORY_ROWS-row (200,000) JSONL file, its import, then its export; after each, the peak RSS of the three processes
// (sampled every 100 ms) and at the end the worker's CPU seconds.
//   MEMORY_WORKER_FLAGS="--max-old-space-size=160"  Node flags for the worker instead of the launcher's (WORKER_HEAP_MB's;
//                                                   "" for none: V8's own sizing; a heap cap's RSS and CPU side by side)
//   MEMORY_WORKER_FLAGS="--trace-gc"                 the worker's GC lines in bench/results/profiles/worker-gc.log
//                                                   (its live heap: the size after each Mark-Compact)
//   MEMORY_ALLOCATIONS=1                             every byte the worker allocates during the import and the
//                                                   export, collected or not, sampled by V8's heap profiler into
//                                                   bench/results/profiles/{import,export}.heapprofile
//   MEMORY_EXPORT=0                                  no export after the import
//   MEMORY_UPLOAD_MB=512                             instead of the rows: an upload of that many MiB of JSONL-looking
//                                                   text, nothing after it (a file of any size: the upload's bound)
//   MEMORY_PROBE=1                                   gateway's and core's process.memoryUsage() sampled in them
//                                                   (memory-probe.mjs): at idle and at each phase's peak RSS, its
//                                                   heap (used, total) and its bytes outside it (external, arrayBuffers);
//                                                   MEMORY_PROBE_LIVE=1 collects before each sample: what is alive
//   MEMORY_GATEWAY_FLAGS="", MEMORY_CORE_FLAGS=""    Node flags for gateway and core instead of the launcher's
//                                                   (SEMI_SPACE_MB's; "" for none: V8's own sizing)
//   MEMORY_GETS=20000                                before the upload, that many GETs of one resource (16 at once):
//                                                   gateway's and core's CPU ms per request, the request path's cost
//                                                   of their flags (CPU time hardly depends on the machine's load)
//   MEMORY_CPU=1                                     the worker's CPU profile of the import and of the export, through
//                                                   the inspector, into bench/results/profiles/{import,export}.cpuprofile
//                                                   (read them with profile-top.mjs)
// Run from bench/ after a build: `../node_modules/.bin/node src/files-memory.mjs`.
import { cpuProfiler, inspectorSession } from "./inspector.mjs";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent } from "node:https";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startDatabase } from "@rms/test-db";
import { freePort, newTestKey, PublicApi, serviceNodeFlags, startCoreProcess, startGatewayProcess, workerNodeFlags } from "@rms/cli/stack";
import { jsonlChunks, paddingChunks, peakRss, rssOf, runJob, upload } from "./files.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const profiles = join(root, "bench/results/profiles");
const ROWS = Number(process.env.MEMORY_ROWS ?? 200_000);
// The worker's flags: those `rms start` gives it (WORKER_HEAP_MB's heap) unless MEMORY_WORKER_FLAGS says otherwise.
const WORKER_FLAGS = process.env.MEMORY_WORKER_FLAGS === undefined ? workerNodeFlags() : process.env.MEMORY_WORKER_FLAGS.split(" ").filter(Boolean);
const ALLOCATIONS = process.env.MEMORY_ALLOCATIONS === "1";
const CPU = process.env.MEMORY_CPU === "1";
/** MEMORY_EXPORT=0: the upload and the import only. */
const EXPORT = process.env.MEMORY_EXPORT !== "0";
const UPLOAD_MB = Number(process.env.MEMORY_UPLOAD_MB ?? 0);
const PROBE = process.env.MEMORY_PROBE === "1";
const GETS = Number(process.env.MEMORY_GETS ?? 0);
const INSPECTOR_PORT = await freePort();

mkdirSync(profiles, { recursive: true });
const dir = mkdtempSync(join(tmpdir(), "rms-files-memory-"));
const database = await startDatabase({ dataDir: join(dir, "db"), env: { ...process.env, MONGODB_URI: "" } });
const databaseName = "filesmemory";
const corePort = await freePort();
const gatewayPort = await freePort();
/** The probe's NODE_OPTIONS for a process (MEMORY_PROBE), writing to `<dir>/<name>.probe.json`. */
const probeEnv = (name) => {
  if (!PROBE) return {};
  const live = process.env.MEMORY_PROBE_LIVE ? { MEMORY_PROBE_LIVE: process.env.MEMORY_PROBE_LIVE } : {};
  const probe = join(dirname(fileURLToPath(import.meta.url)), "memory-probe.mjs");
  return { NODE_OPTIONS: `--import=${probe}`, MEMORY_PROBE_FILE: join(dir, `${name}.probe.json`), ...live };
};
/** Node's flags for gateway or core: the launcher's unless MEMORY_GATEWAY_FLAGS / MEMORY_CORE_FLAGS says otherwise. */
const flagsOf = (variable) => (process.env[variable] === undefined ? serviceNodeFlags() : process.env[variable].split(" ").filter(Boolean));
const GATEWAY_FLAGS = flagsOf("MEMORY_GATEWAY_FLAGS");
const CORE_FLAGS = flagsOf("MEMORY_CORE_FLAGS");
const core = await startCoreProcess({ mongoUri: database.uri, databaseName, port: corePort, env: probeEnv("core"), nodeFlags: CORE_FLAGS });
const gateway = await startGatewayProcess({
  coreAddr: `127.0.0.1:${corePort}`,
  mongoUri: database.uri,
  databaseName,
  dataDir: dir,
  port: gatewayPort,
  // The GETs' loop runs past the default rate limits, as the bench's stacks do.
  env: { ...probeEnv("gateway"), RATE_LIMIT_TEST: "100000000", RATE_LIMIT_ADDRESS: "100000000" },
  nodeFlags: GATEWAY_FLAGS,
});
console.log(`flags: gateway ${GATEWAY_FLAGS.join(" ") || "none"}, core ${CORE_FLAGS.join(" ") || "none"}, worker ${WORKER_FLAGS.join(" ") || "none"}`);
const workerLog = openSync(join(profiles, "worker-gc.log"), "w");
const inspect = ALLOCATIONS || CPU ? [`--inspect=127.0.0.1:${INSPECTOR_PORT}`] : [];
const worker = spawn(process.execPath, [...WORKER_FLAGS, ...inspect, join(root, "apps/core/dist/worker/main.js")], {
  env: { PATH: process.env.PATH, MONGODB_URI: database.uri, MONGODB_DATABASE: databaseName, LOG_LEVEL: "warn", WORKER_METRICS_PORT: "0", RMS_SUPERVISED: "1" },
  stdio: ["pipe", workerLog, workerLog],
});
const { secret } = await newTestKey(`127.0.0.1:${corePort}`);
const api = new PublicApi(dir, gatewayPort, secret);
const agent = new Agent({ ca: readFileSync(join(dir, "tls", "cert.pem")), keepAlive: true });
const pids = { gateway: gateway.process.pid, core: core.process.pid, worker: worker.pid };
const mib = (peak) => Object.fromEntries(Object.entries(peak).map(([name, bytes]) => [name, Math.round(bytes / 1024 / 1024)]));

/** The worker's allocation sampler (MEMORY_ALLOCATIONS) or CPU profiler (MEMORY_CPU) over the inspector protocol, or nothing. */
async function phaseSampler() {
  if (!ALLOCATIONS && !CPU) return { start: async () => {}, stop: async () => {}, close: () => {} };
  const session = await inspectorSession(INSPECTOR_PORT);
  const { call } = session;
  if (CPU) return { ...(await cpuProfiler(session, profiles)), close: session.close };
  await call("HeapProfiler.enable");
  return {
    // Collected objects kept in the samples: what is allocated, not only what survives.
    start: () =>
      call("HeapProfiler.startSampling", { samplingInterval: 16_384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }),
    stop: async (name) => writeFileSync(join(profiles, `${name}.heapprofile`), JSON.stringify((await call("HeapProfiler.stopSampling")).result.profile)),
    close: session.close,
  };
}

/** User + system CPU seconds of a process, from /proc. */
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(stat[11]) + Number(stat[12])) / 100;
}

/** GETS GETs of one resource, 16 at once: gateway's and core's CPU ms per request. */
async function requestPathCpu() {
  const { id } = await api.send("POST", "/v1/resources", { json: { name: "probe" } });
  const before = { gateway: cpuSeconds(pids.gateway), core: cpuSeconds(pids.core) };
  let left = GETS;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (left-- > 0) {
        const reply = await api.request("GET", `/v1/resources/${id}`);
        if (reply.status !== 200) throw new Error(`GET: ${reply.status}`);
      }
    }),
  );
  const perRequest = (name) => (((cpuSeconds(pids[name]) - before[name]) * 1000) / GETS).toFixed(3);
  console.log(`${GETS} GETs: CPU ms per request gateway ${perRequest("gateway")}, core ${perRequest("core")}`);
}

/** The probe's figures of gateway and core for the phase that ends (MEMORY_PROBE), printed; the next phase starts. */
async function probed(phase) {
  if (!PROBE) return;
  for (const [name, child] of [
    ["gateway", gateway],
    ["core", core],
  ]) {
    const file = join(dir, `${name}.probe.json`);
    rmSync(file, { force: true });
    child.process.kill("SIGUSR2");
    for (let i = 0; i < 100 && !existsSync(file); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    const { atPeakRss, peaks } = JSON.parse(readFileSync(file, "utf8"));
    const line = (usage) =>
      Object.entries(usage)
        .map(([field, value]) => `${field} ${value}`)
        .join(", ");
    console.log(`  ${phase}, ${name} (MiB): at its peak RSS ${line(atPeakRss)}; each field's peak ${line(peaks)}`);
  }
}

const allocations = await phaseSampler();
try {
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  console.log("idle RSS (MiB)", mib(rssOf(pids)));
  await probed("idle");
  if (GETS > 0) {
    await requestPathCpu();
    await probed("GETs");
  }
  let sampler = peakRss(pids);
  const chunks = UPLOAD_MB > 0 ? paddingChunks(UPLOAD_MB * 1024 * 1024) : jsonlChunks(ROWS, "memory");
  const started = performance.now();
  const file = await upload({ port: gatewayPort, agent, key: secret, chunks, filename: "rows.jsonl" });
  console.log(`upload of ${file.size} bytes in ${Math.round(performance.now() - started)} ms: peak RSS (MiB)`, mib(sampler.stop()));
  await probed("upload");
  // A file of padding is not for an import: its upload is the whole run.
  if (UPLOAD_MB === 0) {
    sampler = peakRss(pids);
    await allocations.start();
    const imported = await runJob(api, { type: "resources.import", params: { file: file.id } }, 250);
    await allocations.stop("import");
    console.log(`import of ${ROWS} rows: ${imported.job.status} in ${Math.round(imported.ms)} ms; peak RSS (MiB)`, mib(sampler.stop()));
    if (EXPORT) {
      sampler = peakRss(pids);
      await allocations.start();
      const exported = await runJob(api, { type: "resources.export", params: { filter: { metadata: { tag: "memory" } } } }, 250);
      await allocations.stop("export");
      console.log(`export: ${exported.job.status} in ${Math.round(exported.ms)} ms; peak RSS (MiB)`, mib(sampler.stop()));
    }
    const stat = readFileSync(`/proc/${worker.pid}/stat`, "utf8").split(") ")[1].split(" ");
    console.log(`worker CPU: ${(Number(stat[11]) + Number(stat[12])) / 100} s (flags: ${WORKER_FLAGS.join(" ") || "none"})`);
  }
} finally {
  allocations.close();
  agent.destroy();
  api.close();
  worker.kill("SIGTERM");
  await new Promise((resolve) => worker.once("exit", resolve));
  await gateway.stop();
  await core.stop();
  await database.stop();
  rmSync(dir, { recursive: true, force: true });
}
