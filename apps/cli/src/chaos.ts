// `npm run chaos`: 1,000 creates, each followed by one or two updates, with random SIGKILLs of core,
// gateway and the workers and client retries with the same Idempotency-Keys, while one webhook endpoint
// takes every event at a local receiver; then the stack settles (relay drained, deliveries done) and the
// database and the receiver are counted: resources, committed changes, their events and their deliveries.
// Loopback only, bounded in time.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { Agent } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { encryptSecret, newEndpointSecret, newMasterKeyText, parseMasterKey, WEBHOOK_DELIVERIES_COLLECTION, WEBHOOK_ENDPOINTS_COLLECTION } from "@rms/core";
import { startDatabase } from "@rms/test-db";
import { MongoClient } from "mongodb";
import { runJobsChaos } from "./chaos-jobs.js";
import { Webhook } from "standardwebhooks";
import type { Child } from "./stack/children.js";
import { freePort, httpsCall, newTestKey, startCoreProcess, startGatewayProcess, startWorkerProcess } from "./stack/processes.js";

const TOTAL = Number(process.env.CHAOS_REQUESTS ?? 1000);
const CONCURRENCY = 16;
const DEADLINE_MS = 6 * 60_000;
const CRASH_AFTER_WRITE = "resource.create:0.02"; // core also kills itself after 2% of create writes
/** Bound on the wait, after the clients finish, for the relay to empty every outbox and the workers to finish every delivery. */
const SETTLE_MS = 120_000;
/** Worker processes, each SIGKILLed at random like core and gateway. */
const WORKERS = Number(process.env.CHAOS_WORKERS ?? 2);
/** A compressed retry schedule: a delivery lost with a killed worker, or refused by the receiver, comes back within seconds. */
const RETRY_SCHEDULE = "1s,2s,3s,5s,5s,5s,5s,5s";
/** Share of deliveries the receiver answers with a 500, so retries happen too. */
const RECEIVER_FAILURE_RATE = 0.05;
/** Updates per resource after its create is acknowledged: one or two. */
const updatesOf = (i: number) => 1 + (i % 2);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const started = Date.now();
const log = (line: string) => process.stderr.write(`chaos ${((Date.now() - started) / 1000).toFixed(1)}s: ${line}\n`);

const dir = mkdtempSync(join(tmpdir(), "rms-chaos-"));
const database = await startDatabase({ dataDir: join(dir, "db"), env: { ...process.env, MONGODB_URI: "" } });
const databaseName = "chaos";
const corePort = await freePort();
const coreAddr = `127.0.0.1:${corePort}`;
const gatewayPort = await freePort();

let stopping = false;
let killingStopped = false;
type ProcessName = "core" | "gateway" | `worker${number}`;
const workerNames = Array.from({ length: WORKERS }, (_, i) => `worker${i + 1}` as const);
const kills = { core: 0, gateway: 0, worker: 0, selfCrash: 0 };
const processes: Partial<Record<ProcessName, Child>> = {};

// The receiver: verifies every delivery with the Standard Webhooks library and counts them by event id.
const secretKey = newMasterKeyText();
const endpointSecret = newEndpointSecret();
const verifier = new Webhook(endpointSecret);
const received = { requests: 0, unverified: 0, refused: 0, answered2xx: new Map<string, number>() };
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    received.requests++;
    let id: string;
    try {
      id = (verifier.verify(Buffer.concat(chunks).toString("utf8"), request.headers as IncomingHttpHeaders & Record<string, string>) as { id: string }).id;
    } catch {
      received.unverified++;
      response.writeHead(400).end();
      return;
    }
    if (Math.random() < RECEIVER_FAILURE_RATE) {
      received.refused++;
      response.writeHead(500).end();
      return;
    }
    received.answered2xx.set(id, (received.answered2xx.get(id) ?? 0) + 1);
    response.end("ok");
  });
});
await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
// A short jobs lease: a killed worker's job is taken over within seconds (the jobs phase).
const webhookEnv = { RMS_SECRET_KEY: secretKey, WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE, JOBS_LEASE_MS: "3000" };

const launch: Record<ProcessName, () => Promise<Child>> = {
  core: () => startCoreProcess({ mongoUri: database.uri, databaseName, port: corePort, faults: CRASH_AFTER_WRITE }),
  gateway: () =>
    startGatewayProcess({
      coreAddr,
      mongoUri: database.uri,
      databaseName,
      dataDir: dir,
      port: gatewayPort,
      env: { RATE_LIMIT_TEST: "100000", RATE_LIMIT_LIVE: "100000", RATE_LIMIT_ADDRESS: "100000" },
    }),
  ...Object.fromEntries(workerNames.map((name) => [name, async () => startWorkerProcess({ mongoUri: database.uri, databaseName, name, env: webhookEnv })])),
};

/** Keeps a process running: whenever it dies (killed by us or by its crash point), it is started again. */
async function supervise(name: ProcessName): Promise<void> {
  while (!stopping) {
    try {
      const child = await launch[name]!();
      processes[name] = child;
      const how = await child.exited;
      if (!stopping && name === "core" && how === "SIGKILL" && !killedByUs.has(child)) kills.selfCrash++;
    } catch (error) {
      if (!stopping) log(`${name} did not start (${(error as Error).message.split("\n")[0]}); retrying`);
      await sleep(500);
    }
  }
}
const killedByUs = new WeakSet<Child>();

async function killer(): Promise<void> {
  while (!killingStopped) {
    await sleep(5_000 + Math.random() * 5_000);
    const names: ProcessName[] = ["core", "gateway", ...workerNames];
    const name = names[Math.floor(Math.random() * names.length)]!;
    const child = processes[name];
    if (killingStopped || !child || child.process.exitCode !== null || child.process.signalCode !== null) continue;
    killedByUs.add(child);
    child.process.kill("SIGKILL");
    kills[name === "core" || name === "gateway" ? name : "worker"]++;
  }
}

const supervisors = [supervise("core"), supervise("gateway"), ...workerNames.map(supervise)];
while (!processes.core || !processes.gateway) await sleep(100);
let key: { accountId: string; secret: string } | undefined;
while (!key)
  key = await newTestKey(coreAddr).catch(async () => {
    await sleep(300);
    return undefined;
  });
const { accountId, secret } = key;
// One endpoint taking every event of the account, written as the endpoints API stores it (secret sealed
// under the stack's RMS_SECRET_KEY with the endpoint id as context).
const setup = await new MongoClient(database.uri).connect();
const endpointId = `we_chaos${Date.now()}`;
await setup
  .db(databaseName)
  .collection(WEBHOOK_ENDPOINTS_COLLECTION)
  .insertOne({
    _id: endpointId as never,
    account: accountId,
    livemode: false,
    url: receiverUrl,
    enabled_events: ["*"],
    status: "enabled",
    description: null,
    metadata: [],
    created: Math.floor(Date.now() / 1000),
    slot: 0,
    secrets: [{ sealed: encryptSecret(endpointSecret, { primary: parseMasterKey(secretKey) }, endpointId), expires_at: null }],
    version: 0,
    pending_events: [],
    idempotency: endpointId,
    request_hash: null,
  });
await setup.close();
log(`stack up with ${WORKERS} workers; ${TOTAL} creates, each followed by 1 or 2 updates, concurrency ${CONCURRENCY}; every event delivered to ${receiverUrl}`);
const killing = killer();
const progress = setInterval(
  () =>
    log(
      `${outcomes.ok}/${TOTAL} created, ${outcomes.updated} updates acknowledged, ${outcomes.retries} retries, ${received.answered2xx.size} events delivered, SIGKILLs core ${kills.core} gateway ${kills.gateway} workers ${kills.worker}, core crash-after-write ${kills.selfCrash}`,
    ),
  10_000,
);

const outcomes = { ok: 0, updated: 0, retries: 0, gaveUp: 0 };
const acknowledged = new Set<number>();
/** How the failed attempts failed: HTTP status, or "network" when no answer came. */
const failures: Record<string, number> = {};
// Work queue: a request that fails goes to the back and is retried later with the same key, so a key
// locked by a killed gateway (409 until its lock expires) does not stall a client. Step 0 is the create;
// steps 1.. are updates of that resource, queued once the step before is acknowledged.
interface Step {
  i: number;
  step: number;
  id?: string;
}
const pending: Step[] = Array.from({ length: TOTAL }, (_, i) => ({ i, step: 0 }));
// One keep-alive connection pool, as a real client would use (no TLS handshake per request).
const agent = new Agent({ ca: readFileSync(join(dir, "tls", "cert.pem")), keepAlive: true, maxSockets: CONCURRENCY });
async function client(): Promise<void> {
  while (pending.length > 0 && Date.now() - started < DEADLINE_MS) {
    const work = pending.shift()!;
    const { i, step } = work;
    // An update carries a changing metadata value; retried after an unknown outcome it may apply twice,
    // which is why the report counts committed changes from the database, not from the client.
    const reply = await httpsCall(dir, gatewayPort, "POST", step === 0 ? "/v1/resources" : `/v1/resources/${work.id}`, {
      key: secret,
      form: step === 0 ? `name=chaos-${i}` : `metadata[step]=${step}`,
      headers: { "idempotency-key": `chaos-key-${i}-${step}` },
      agent,
    }).catch(() => undefined);
    if (reply && (reply.status === 200 || reply.status === 201)) {
      if (step === 0) {
        outcomes.ok++;
        acknowledged.add(i);
        work.id = (JSON.parse(reply.body) as { id: string }).id;
      } else outcomes.updated++;
      if (step < updatesOf(i)) pending.push({ i, step: step + 1, id: work.id });
      continue;
    }
    outcomes.retries++;
    const kind = reply ? String(reply.status) : "network";
    failures[kind] = (failures[kind] ?? 0) + 1;
    pending.push(work);
    await sleep(50 + Math.random() * 200);
  }
}
await Promise.all(Array.from({ length: CONCURRENCY }, client));
outcomes.gaveUp = pending.length;
clearInterval(progress);
killingStopped = true;
await killing;

// Settle: core and workers stay up (their supervisors restart them if a kill landed last) until no
// document has an event left in its outbox and no delivery is pending, or the bound passes.
const mongo = await new MongoClient(database.uri).connect();
const db = mongo.db(databaseName);
const settleStarted = Date.now();
const unsettled = async () => ({
  outbox: await db.collection("resources").countDocuments({ "pending_events.0": { $exists: true } }),
  deliveries: await db.collection(WEBHOOK_DELIVERIES_COLLECTION).countDocuments({ status: "pending" }),
});
let left = await unsettled();
while ((left.outbox > 0 || left.deliveries > 0) && Date.now() - settleStarted < SETTLE_MS) {
  await sleep(500);
  left = await unsettled();
}
const stillPending = left.outbox;
log(`settled in ${((Date.now() - settleStarted) / 1000).toFixed(1)}s; documents with pending events: ${stillPending}, pending deliveries: ${left.deliveries}`);
// The jobs phase (chaos-jobs.ts): an import and a bulk update run by the same workers, SIGKILLed at random
// (their supervisors restart them); core and gateway stay up. A fresh account, so its 20,000 events do not
// all go to the receiver.
const jobs = await runJobsChaos({
  db,
  databaseName,
  coreAddr,
  dataDir: dir,
  gatewayPort,
  workers: () => workerNames.map((name) => processes[name]),
  log,
});
stopping = true;
for (const child of Object.values(processes)) await child?.stop(5_000);
await Promise.all(supervisors);

// The jobs phase's resources are counted by its own report.
const resources = (
  await db
    .collection("resources")
    .find({ account: accountId }, { projection: { name: 1, version: 1, deleted: 1 } })
    .toArray()
).filter((d) => String(d.name).startsWith("chaos-"));
const names = resources.map((d) => d.name as string);
// The jobs phase's events are counted by its own report.
const ofPhaseOne = new Set(resources.map((d) => String(d._id)));
const events = (
  await db
    .collection("events")
    .find({ account: accountId }, { projection: { "object.id": 1, sequence: 1, pending_endpoints: 1 } })
    .toArray()
).filter((e) => ofPhaseOne.has(e.object.id));
const deliveryStatus = await db
  .collection(WEBHOOK_DELIVERIES_COLLECTION)
  .aggregate<{ _id: string; n: number }>([{ $group: { _id: "$status", n: { $sum: 1 } } }])
  .toArray();
await mongo.close();
await database.stop();
await new Promise<void>((resolve) => receiver.close(() => resolve()));
rmSync(dir, { recursive: true, force: true });

// Committed changes: a resource at version v has had v + 1 (its create and v updates; no deletes here).
const changes = resources.reduce((sum, d) => sum + (d.version as number) + 1, 0);
const seen = new Map<string, number>();
for (const e of events) {
  const at = `${e.object.id}/${e.sequence}`;
  seen.set(at, (seen.get(at) ?? 0) + 1);
}
const duplicateEvents = [...seen.values()].reduce((sum, n) => sum + (n - 1), 0);
// Missing: a committed change (sequence 0..version of a resource) with no event for it.
let missingEvents = 0;
for (const d of resources) for (let s = 0; s <= (d.version as number); s++) if (!seen.has(`${d._id}/${s}`)) missingEvents++;

// Deliveries: what the receiver answered 2xx to. Undelivered: an event never answered 2xx; duplicates:
// 2xx answers beyond the first for an event (allowed: a worker killed after the POST and before recording it).
const undelivered = events.filter((e) => !received.answered2xx.has(e._id as unknown as string)).length;
const deliveries = [...received.answered2xx.values()].reduce((sum, n) => sum + n, 0);
const duplicateDeliveries = deliveries - received.answered2xx.size;
const stillWaiting = events.filter((e) => ((e.pending_endpoints as string[] | undefined) ?? []).length > 0).length;

const counts = new Map<string, number>();
for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
const duplicates = [...counts.values()].reduce((sum, n) => sum + (n - 1), 0);
// Lost: a create the client was told succeeded whose resource is not there.
const lost = [...acknowledged].filter((i) => !counts.has(`chaos-${i}`)).length;
const summary = {
  resources_expected: TOTAL,
  resources_found: names.length,
  duplicates,
  lost,
  acknowledged: outcomes.ok,
  updates_acknowledged: outcomes.updated,
  changes,
  events: events.length,
  missing_events: missingEvents,
  duplicate_events: duplicateEvents,
  documents_with_pending_events: stillPending,
  deliveries,
  undelivered,
  duplicate_deliveries: duplicateDeliveries,
  events_with_pending_webhooks: stillWaiting,
  delivery_requests: received.requests,
  delivery_requests_refused_by_receiver: received.refused,
  delivery_requests_unverified: received.unverified,
  delivery_documents_by_status: Object.fromEntries(deliveryStatus.map((d) => [d._id, d.n])),
  unfinished_at_deadline: outcomes.gaveUp,
  client_retries: outcomes.retries,
  failed_attempts_by_status: failures,
  sigkill_core: kills.core,
  sigkill_gateway: kills.gateway,
  sigkill_workers: kills.worker,
  core_crash_after_write: kills.selfCrash,
  seconds: Math.round((Date.now() - started) / 1000),
};
process.stdout.write(`${JSON.stringify({ ...summary, jobs: jobs.report }, null, 2)}\n`);
const ok =
  jobs.ok &&
  duplicates === 0 &&
  lost === 0 &&
  outcomes.gaveUp === 0 &&
  missingEvents === 0 &&
  duplicateEvents === 0 &&
  stillPending === 0 &&
  undelivered === 0 &&
  stillWaiting === 0 &&
  received.unverified === 0;
process.exit(ok ? 0 : 1);
