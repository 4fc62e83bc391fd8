// `npm run chaos`: 1,000 creates, each followed by one or two updates, with random SIGKILLs of core and
// gateway and client retries with the same Idempotency-Keys; then the stack settles (relay drained) and
// the database is counted: resources, committed changes and their events. Loopback only, bounded in time.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDatabase } from "@rms/test-db";
import { MongoClient } from "mongodb";
import { runJobsChaos } from "./chaos-jobs.js";
import type { Child } from "./stack/children.js";
import { freePort, httpsCall, newTestKey, startCoreProcess, startGatewayProcess } from "./stack/processes.js";

const TOTAL = Number(process.env.CHAOS_REQUESTS ?? 1000);
const CONCURRENCY = 16;
const DEADLINE_MS = 6 * 60_000;
const CRASH_AFTER_WRITE = "resource.create:0.02"; // core also kills itself after 2% of create writes
/** Bound on the wait, after the clients finish, for the relay to empty every outbox. */
const SETTLE_MS = 60_000;
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
const kills = { core: 0, gateway: 0, selfCrash: 0 };
const processes: Record<"core" | "gateway", Child | undefined> = { core: undefined, gateway: undefined };

const launch = {
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
};

/** Keeps a process running: whenever it dies (killed by us or by its crash point), it is started again. */
async function supervise(name: "core" | "gateway"): Promise<void> {
  while (!stopping) {
    try {
      const child = await launch[name]();
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
    const name = Math.random() < 0.5 ? "core" : "gateway";
    const child = processes[name];
    if (killingStopped || !child || child.process.exitCode !== null || child.process.signalCode !== null) continue;
    killedByUs.add(child);
    child.process.kill("SIGKILL");
    kills[name]++;
  }
}

const supervisors = [supervise("core"), supervise("gateway")];
while (!processes.core || !processes.gateway) await sleep(100);
let key: { accountId: string; secret: string } | undefined;
while (!key)
  key = await newTestKey(coreAddr).catch(async () => {
    await sleep(300);
    return undefined;
  });
const { accountId, secret } = key;
log(`stack up; ${TOTAL} creates, each followed by 1 or 2 updates, concurrency ${CONCURRENCY}`);
const killing = killer();
const progress = setInterval(
  () =>
    log(
      `${outcomes.ok}/${TOTAL} created, ${outcomes.updated} updates acknowledged, ${outcomes.retries} retries, SIGKILLs core ${kills.core} gateway ${kills.gateway}, core crash-after-write ${kills.selfCrash}`,
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

// Settle: core stays up (its supervisor restarts it if a kill landed last) until no document has an
// event left in its outbox, or the bound passes.
const mongo = await new MongoClient(database.uri).connect();
const db = mongo.db(databaseName);
const settleStarted = Date.now();
let stillPending = await db.collection("resources").countDocuments({ "pending_events.0": { $exists: true } });
while (stillPending > 0 && Date.now() - settleStarted < SETTLE_MS) {
  await sleep(500);
  stillPending = await db.collection("resources").countDocuments({ "pending_events.0": { $exists: true } });
}
log(`settled in ${((Date.now() - settleStarted) / 1000).toFixed(1)}s; documents with pending events: ${stillPending}`);
// The jobs phase (chaos-jobs.ts): its own workers, SIGKILLed at random; core and gateway stay up.
const jobs = await runJobsChaos({ db, mongoUri: database.uri, databaseName, dataDir: dir, gatewayPort, secret, accountId, log });
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
const ofPhaseOne = new Set(resources.map((d) => String(d._id)));
const events = (
  await db
    .collection("events")
    .find({ account: accountId }, { projection: { "object.id": 1, sequence: 1 } })
    .toArray()
).filter((e) => ofPhaseOne.has(e.object.id));
await mongo.close();
await database.stop();
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
  unfinished_at_deadline: outcomes.gaveUp,
  client_retries: outcomes.retries,
  failed_attempts_by_status: failures,
  sigkill_core: kills.core,
  sigkill_gateway: kills.gateway,
  core_crash_after_write: kills.selfCrash,
  seconds: Math.round((Date.now() - started) / 1000),
};
process.stdout.write(`${JSON.stringify({ ...summary, jobs: jobs.report }, null, 2)}\n`);
const ok = jobs.ok && duplicates === 0 && lost === 0 && outcomes.gaveUp === 0 && missingEvents === 0 && duplicateEvents === 0 && stillPending === 0;
process.exit(ok ? 0 : 1);
