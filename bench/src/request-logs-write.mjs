#!/usr/bin/env node
// The write cost of one request log, in isolation (issue 28, item 5): what recording adds per request to the
// gateway (redaction and the 8 KiB cut of the parameters and of a GET's answer, the record itself) and to the
// database (its share of a batch written as the recorder writes it: one transaction with the tenant's stream counter,
// into `request_logs` with its list, position and TTL indexes), as CPU time from /proc, with nothing else of the stack
// running. `node bench/src/request-logs-write.mjs` after a build; REQUEST_LOGS_WRITE_COUNT records (default 50,000)
// in batches of REQUEST_LOGS_WRITE_BATCH (default 1,000). Prints one line and writes
// bench/results/request-logs-write.json.
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cpuMeter } from "./load.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const COUNT = Number(process.env.REQUEST_LOGS_WRITE_COUNT ?? 50_000);
const BATCH = Number(process.env.REQUEST_LOGS_WRITE_BATCH ?? 1_000);
const { keep, redact, RequestLogStore, gatewayMongoClient } = await import("@rms/gateway/bench");
const { newRequestId } = await import("@rms/proto");
const { startDatabase } = await import("@rms/test-db");
const { mkdtempSync, rmSync } = await import("node:fs");
const { tmpdir } = await import("node:os");

const work = mkdtempSync(join(tmpdir(), "rms-reqlogs-write-"));
const database = await startDatabase({ dataDir: join(work, "db"), env: { ...process.env, MONGODB_URI: "" } });
const client = gatewayMongoClient(database.uri);
const load = loadavg()[0];
try {
  const store = new RequestLogStore(client.db("rms_bench_request_logs"));
  await store.ensureIndexes();
  // What the GET row answers: one resource, as the stack renders it.
  const answer = JSON.stringify({
    id: "res_0VbmcTa0dnRox8QNLmcF1D",
    object: "resource",
    name: "bench",
    status: "active",
    metadata: { plan: "pro" },
    created: 1_764_000_000,
  });
  const build = (i) => {
    const ms = Date.now();
    return {
      _id: newRequestId(ms),
      account: `acct_${i % 10}`,
      livemode: false,
      method: "GET",
      path: "/v1/resources/res_0VbmcTa0dnRox8QNLmcF1D",
      status: 200,
      status_class: "2xx",
      api_key: "key_0VbmcTa0dnRox8QNLmcF1E",
      key_kind: "secret",
      idempotent_replayed: false,
      duration_ms: 2,
      client_ip: "127.0.0.1",
      user_agent: "autocannon",
      created: Math.floor(ms / 1000),
      request_params_json: JSON.stringify(keep(redact({}))),
      response_body_json: JSON.stringify(keep(redact(JSON.parse(answer)))),
      source: "api",
      expires_at: new Date(ms + 14 * 86_400_000),
    };
  };
  // Warm-up (JIT, the connection pool), not measured.
  await store.insertBatch(Array.from({ length: BATCH }, (_, i) => build(i)));
  const started = process.cpuUsage();
  const records = Array.from({ length: COUNT }, (_, i) => build(i));
  const used = process.cpuUsage(started);
  const gatewayMs = (used.user + used.system) / 1000 / COUNT;
  const meter = cpuMeter({ database: database.pid, client: process.pid });
  const wall = performance.now();
  for (let i = 0; i < COUNT; i += BATCH) await store.insertBatch(records.slice(i, i + BATCH));
  const seconds = (performance.now() - wall) / 1000;
  const cpu = meter.stop();
  const result = {
    records: COUNT,
    batch: BATCH,
    load_average_1m: load,
    gateway_build_ms_per_record: gatewayMs,
    gateway_insert_ms_per_record: cpu.client / COUNT,
    database_ms_per_record: cpu.database / COUNT,
    inserted_per_second: COUNT / seconds,
  };
  const line = `request logs, ${COUNT.toLocaleString("en")} records in batches of ${BATCH}: gateway ${(gatewayMs + result.gateway_insert_ms_per_record).toFixed(4)} ms CPU per record (build ${gatewayMs.toFixed(4)}, insert ${result.gateway_insert_ms_per_record.toFixed(4)}), database ${result.database_ms_per_record.toFixed(4)} ms; ${Math.round(result.inserted_per_second).toLocaleString("en")} records/s; load average ${load.toFixed(1)}`;
  process.stdout.write(`${line}\n`);
  writeFileSync(join(root, "bench", "results", "request-logs-write.json"), `${JSON.stringify({ measured: new Date().toISOString(), ...result }, null, 2)}\n`);
} finally {
  await client.close();
  await database.stop();
  rmSync(work, { recursive: true, force: true });
}
