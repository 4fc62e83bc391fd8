// Start and restart times of mongo-java-server on its H2 file, with resource-shaped documents
// (docs/database.md). Run after a build: `npm run measure:h2 -w @rms/test-db [-- 10000 50000]`.
// For each size and each index set (core's unique index only, as core declares it there; and
// core's unique + non-unique ones, as it declared them before), it fills a new H2 file, then
// restarts the server on it after a clean stop and after a SIGKILL, timing each start until the
// server answers ping, and list-page queries after it (the first reads the file; then the median of 15).
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MongoClient } from "mongodb";
import { startDatabase } from "../dist/index.js";

const sizes = process.argv.slice(2).map(Number).filter(Boolean);
const env = { ...process.env, MONGODB_URI: "" };
const uniqueOnly = [[{ idempotency: 1 }, { unique: true, name: "idempotency_unique" }]];
const withSecondary = [
  ...uniqueOnly,
  [{ account: 1, livemode: 1, _id: -1 }, { name: "tenant_order" }],
  [{ account: 1, livemode: 1, status: 1, _id: -1 }, { name: "tenant_status_order" }],
];

function resource(i) {
  const id = `res_${String(i).padStart(10, "0")}AbCdEfGhIjKl`;
  const state = {
    id,
    name: `Resource ${i}`,
    status: i % 3 ? "active" : "inactive",
    metadata: [
      { k: "order", v: String(i) },
      { k: "team", v: "billing" },
    ],
    created: 1_790_000_000 + i,
  };
  return {
    _id: id,
    account: `acct_${i % 10}`,
    livemode: false,
    ...state,
    idempotency: id,
    request_hash: null,
    version: 0,
    pending_events: [
      {
        _id: `evt_${i}`,
        type: "resource.created",
        created: state.created,
        account: `acct_${i % 10}`,
        livemode: false,
        object: state,
        previous_attributes: null,
        request: { id: `req_${i}`, idempotency_key: null },
      },
    ],
  };
}

const ms = (since) => Math.round(performance.now() - since);

async function timedStart(dataDir, port) {
  const t = performance.now();
  const db = await startDatabase({ env, engine: "mongo-java-server", dataDir, ...(port ? { port } : {}) });
  const startMs = ms(t);
  const client = await new MongoClient(db.uri).connect();
  const page = async () => {
    const q = performance.now();
    await client
      .db("measure")
      .collection("resources")
      .find({ account: "acct_3", livemode: false }, { sort: { _id: -1 }, limit: 21 })
      .toArray();
    return ms(q);
  };
  const firstPageMs = await page();
  // After the JVM has warmed up: the median of the next 15.
  const next = [];
  for (let i = 0; i < 15; i++) next.push(await page());
  const nextPageMs = next.sort((a, b) => a - b)[7];
  await client.close();
  const rssMb = Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${db.pid}/status`, "utf8"))?.[1]) / 1024);
  return { db, startMs, firstPageMs, nextPageMs, rssMb, port: Number(new URL(db.uri).port) };
}

console.log(
  "| documents | indexes declared | file MB | first start (empty) | restart after clean stop | restart after SIGKILL | first list page after restart | list page, warm (median of next 15) | server RSS then |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
for (const n of sizes.length ? sizes : [10_000, 50_000]) {
  const indexSets = [
    ["unique only (core now)", uniqueOnly],
    ["unique + 2 non-unique (before)", withSecondary],
  ];
  for (const [label, indexes] of process.env.MEASURE_UNIQUE_ONLY ? indexSets.slice(0, 1) : indexSets) {
    const dataDir = mkdtempSync(join(tmpdir(), "rms-h2-measure-"));
    try {
      const first = await timedStart(dataDir);
      const client = await new MongoClient(first.db.uri).connect();
      const resources = client.db("measure").collection("resources");
      for (const [keys, options] of indexes) await resources.createIndex(keys, options);
      for (let i = 0; i < n; i += 1_000) await resources.insertMany(Array.from({ length: Math.min(1_000, n - i) }, (_, j) => resource(i + j)));
      await client.close();
      await first.db.stop();
      const clean = await timedStart(dataDir, first.port);
      process.kill(clean.db.pid, "SIGKILL");
      await clean.db.stop();
      const killed = await timedStart(dataDir, first.port);
      await killed.db.stop();
      const mb = (statSync(join(dataDir, "mongo-java-server.mv")).size / 1e6).toFixed(0);
      console.log(
        `| ${n.toLocaleString("en")} | ${label} | ${mb} | ${first.startMs} ms | ${clean.startMs} ms | ${killed.startMs} ms | ${clean.firstPageMs} ms | ${clean.nextPageMs} ms | ${clean.rssMb} MB |`,
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
}
