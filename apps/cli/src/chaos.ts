// `npm run chaos`: 1,000 creates with random SIGKILLs of core and gateway and client retries with the
// same Idempotency-Keys, then a count of what the database holds. Loopback only, bounded in time.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDatabase } from "@rms/test-db";
import { MongoClient } from "mongodb";
import type { Child } from "./stack/children.js";
import { freePort, httpsCall, newTestKey, startCoreProcess, startGatewayProcess } from "./stack/processes.js";

const TOTAL = Number(process.env.CHAOS_REQUESTS ?? 1000);
const CONCURRENCY = 16;
const DEADLINE_MS = 4 * 60_000;
const CRASH_AFTER_WRITE = "resource.create:0.02"; // core also kills itself after 2% of create writes

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
const kills = { core: 0, gateway: 0, selfCrash: 0 };
const processes: Record<"core" | "gateway", Child | undefined> = { core: undefined, gateway: undefined };

const launch = {
  core: () => startCoreProcess({ mongoUri: database.uri, databaseName, port: corePort, faults: CRASH_AFTER_WRITE }),
  gateway: () =>
    startGatewayProcess({ coreAddr, mongoUri: database.uri, databaseName, dataDir: dir, port: gatewayPort, env: { RATE_LIMIT_TEST: "100000", RATE_LIMIT_LIVE: "100000" } }),
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
  while (!stopping) {
    await sleep(1_500 + Math.random() * 2_500);
    const name = Math.random() < 0.5 ? "core" : "gateway";
    const child = processes[name];
    if (stopping || !child || child.process.exitCode !== null || child.process.signalCode !== null) continue;
    killedByUs.add(child);
    child.process.kill("SIGKILL");
    kills[name]++;
  }
}

const supervisors = [supervise("core"), supervise("gateway")];
while (!processes.core || !processes.gateway) await sleep(100);
let key: { accountId: string; secret: string } | undefined;
while (!key) key = await newTestKey(coreAddr).catch(async () => (await sleep(300), undefined));
const { accountId, secret } = key;
log(`stack up; ${TOTAL} creates, concurrency ${CONCURRENCY}`);
const killing = killer();

const outcomes = { ok: 0, retries: 0, gaveUp: 0 };
let next = 0;
async function client(): Promise<void> {
  for (let i = next++; i < TOTAL; i = next++) {
    for (;;) {
      if (Date.now() - started > DEADLINE_MS) {
        outcomes.gaveUp++;
        break;
      }
      const reply = await httpsCall(dir, gatewayPort, "POST", "/v1/resources", {
        key: secret,
        form: `name=chaos-${i}`,
        headers: { "idempotency-key": `chaos-key-${i}` },
      }).catch(() => undefined);
      if (reply && (reply.status === 200 || reply.status === 201)) {
        outcomes.ok++;
        break;
      }
      outcomes.retries++;
      await sleep(100 + Math.random() * 300);
    }
  }
}
await Promise.all(Array.from({ length: CONCURRENCY }, client));
stopping = true;
await killing;
for (const child of Object.values(processes)) await child?.stop(5_000);
await Promise.all(supervisors);

const mongo = await new MongoClient(database.uri).connect();
const names = (await mongo.db(databaseName).collection("resources").find({ account: accountId }, { projection: { name: 1 } }).toArray()).map((d) => d.name as string);
await mongo.close();
await database.stop();
rmSync(dir, { recursive: true, force: true });

const counts = new Map<string, number>();
for (const name of names) counts.set(name, (counts.get(name) ?? 0) + 1);
const duplicates = [...counts.values()].reduce((sum, n) => sum + (n - 1), 0);
const lost = Array.from({ length: TOTAL }, (_, i) => `chaos-${i}`).filter((n) => !counts.has(n)).length;
const summary = {
  resources_expected: TOTAL,
  resources_found: names.length,
  duplicates,
  lost,
  client_successes: outcomes.ok,
  client_retries: outcomes.retries,
  client_gave_up: outcomes.gaveUp,
  sigkill_core: kills.core,
  sigkill_gateway: kills.gateway,
  core_crash_after_write: kills.selfCrash,
  seconds: Math.round((Date.now() - started) / 1000),
};
process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
process.exit(duplicates === 0 && lost === 0 && outcomes.gaveUp === 0 ? 0 : 1);
