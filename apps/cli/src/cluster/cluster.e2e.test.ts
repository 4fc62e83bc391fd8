// `rms cluster` (what `npm run cluster` runs) as a real process: three mongod members, two cores, two gateways,
// two workers and HAProxy. Failover (a stepped-down and a SIGKILLed primary under a stream of creates), rate limits
// and a revocation across the two gateways, the PROXY protocol's client addresses, and SIGTERM stopping everything.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AdminService, KeyKind, bearerMetadata, createClient } from "@rms/proto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../stack/processes.js";

const bin = new URL("../../bin/rms.js", import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), "rms-cluster-"));
const ADMIN_TOKEN = "cluster-test-admin-token-0123456789";
/** A short election timeout (mongod's default is 10 s): the tests wait for elections. */
const ELECTION_TIMEOUT_MS = 2_000;
const RATE_LIMIT_LIVE = 20;
const RATE_LIMIT_ADDRESS = 30;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTPS request to 127.0.0.1:`port` from `agent` (which fixes the local address), trusting the development certificate. */
function call(
  agent: Agent,
  port: number,
  method: string,
  path: string,
  options: { key?: string; form?: string; idempotencyKey?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path,
        method,
        agent,
        timeout: 20_000,
        headers: {
          ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
          ...(options.form !== undefined ? { "content-type": "application/x-www-form-urlencoded" } : {}),
          ...(options.idempotencyKey ? { "idempotency-key": options.idempotencyKey } : {}),
        },
      },
      (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(options.form);
  });
}

const agents: Agent[] = [];
/** A keep-alive client whose connections come from `localAddress` (loopback answers on all of 127/8). */
function client(localAddress = "127.0.0.1"): Agent {
  const agent = new Agent({ ca: readFileSync(join(dataDir, "tls", "cert.pem")), keepAlive: true, maxSockets: 4, localAddress });
  agents.push(agent);
  return agent;
}

/** Processes (other than this one) whose environment names our data directory: the cluster's. */
function clusterProcesses(): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)) {
    try {
      if (readFileSync(`/proc/${pid}/environ`, "utf8").includes(`RMS_DATA_DIR=${dataDir}\0`)) {
        found.push(`pid ${pid}: ${readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").slice(0, 100)}`);
      }
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The pid of the mongod listening on `port`. */
function mongodPid(port: number): number {
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (args[0]?.endsWith("mongod") && args[args.indexOf("--port") + 1] === String(port)) return Number(pid);
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no mongod on port ${port}`);
}

let cluster: ChildProcess;
let output = "";
/** The processes' last error log lines. */
const errorLines: string[] = [];
let exited: Promise<number | null>;
/** Set once a test or the teardown stops the cluster on purpose. */
let stopping = false;
let port = 0;
let coreAddrs: string[] = [];
let gatewayPorts: number[] = [];
let memberPorts: number[] = [];
let mongoUri = "";

const admin = (addr: string) => createClient(AdminService, addr, { metadata: bearerMetadata(ADMIN_TOKEN), timeoutMs: 10_000 });

/** A new account's key of the given mode, made through core `addr`. */
async function newKey(addr: string, livemode: boolean): Promise<{ id: string; secret: string }> {
  const service = admin(addr);
  try {
    const { account } = await service.createAccount({});
    const { key, secret } = await service.createKey({ accountId: account!.id, kind: KeyKind.SECRET, livemode });
    return { id: key!.id, secret };
  } finally {
    service.close();
  }
}

/** The member that is primary now, by asking each one. */
async function primaryPort(timeoutMs = 30_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const memberPort of memberPorts) {
      const direct = new MongoClient(`mongodb://127.0.0.1:${memberPort}/?directConnection=true`, { serverSelectionTimeoutMS: 1_000, connectTimeoutMS: 1_000 });
      try {
        if ((await direct.db("admin").command({ hello: 1 }))["isWritablePrimary"]) return memberPort;
      } catch {
        // down or not answering
      } finally {
        await direct.close();
      }
    }
    if (Date.now() > deadline) throw new Error("no primary");
    await sleep(250);
  }
}

/** Waits until every member is primary or secondary again. */
async function healthy(timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const direct = new MongoClient(`mongodb://127.0.0.1:${await primaryPort()}/?directConnection=true`, { serverSelectionTimeoutMS: 2_000 });
    try {
      const status = await direct.db("admin").command({ replSetGetStatus: 1 });
      if ((status["members"] as { stateStr: string }[]).every((m) => m.stateStr === "PRIMARY" || m.stateStr === "SECONDARY")) return;
    } catch {
      // try again
    } finally {
      await direct.close();
    }
    if (Date.now() > deadline) throw new Error("the set did not become healthy");
    await sleep(500);
  }
}

beforeAll(async () => {
  port = await freePort();
  const env = {
    ...process.env,
    MONGODB_URI: "",
    RMS_DB_ENGINE: "",
    RMS_DATA_DIR: dataDir,
    RMS_ADMIN_TOKEN: ADMIN_TOKEN,
    PORT: String(port),
    HTTP_PORT: String(await freePort()),
    CORE_ADDR: `127.0.0.1:${await freePort()}`,
    LOG_LEVEL: "warn",
    RATE_LIMIT_LIVE: String(RATE_LIMIT_LIVE),
    RATE_LIMIT_TEST: "100000",
    RATE_LIMIT_ADDRESS: String(RATE_LIMIT_ADDRESS),
    CLUSTER_ELECTION_TIMEOUT_MS: String(ELECTION_TIMEOUT_MS),
  };
  cluster = spawn(process.execPath, [bin, "cluster"], { env, stdio: ["ignore", "pipe", "pipe"] });
  // The processes' log lines (LOG_LEVEL warn): the last ones at error level are kept, so a failure can show why.
  cluster.stdout!.on("data", (d: Buffer) => {
    for (const line of d.toString("utf8").split("\n")) if (line.includes('"level":50')) errorLines.push(line.slice(0, 2_000));
    errorLines.splice(0, Math.max(0, errorLines.length - 50));
  });
  cluster.stderr!.on("data", (d) => (output += d));
  exited = new Promise((resolve) => cluster.once("exit", (code) => resolve(code)));
  // A cluster that ends before a test stops it says why: its last output, where the failures that follow cannot.
  cluster.once("exit", (code, signal) => {
    if (!stopping) process.stderr.write(`rms cluster exited on its own (code ${code}, signal ${signal}); its last output:\n${output.slice(-6_000)}\n`);
  });
  const deadline = Date.now() + 240_000;
  while (!output.includes("rms: ready") && cluster.exitCode === null && Date.now() < deadline) await sleep(250);
  if (!output.includes("rms: ready")) throw new Error(`rms cluster did not get ready:\n${output}`);
  memberPorts = [...(/at mongodb:\/\/(\S+)\/\?replicaSet/.exec(output)?.[1] ?? "").matchAll(/:(\d+)/g)].map((m) => Number(m[1]));
  mongoUri = /at (mongodb:\/\/\S+)/.exec(output)![1]!;
  coreAddrs = /cores at (\S+) and (\S+) /.exec(output)!.slice(1, 3);
  gatewayPorts = [...(/gateways at (\S+) and (\S+);/.exec(output) ?? []).slice(1, 3)].map((a) => Number(a.split(":")[1]));
}, 300_000);

afterAll(async () => {
  for (const agent of agents) agent.destroy();
  if (cluster && cluster.exitCode === null) {
    stopping = true;
    cluster.kill("SIGTERM");
    await exited;
  }
  rmSync(dataDir, { recursive: true, force: true });
}, 120_000);

describe("rms cluster", () => {
  it("prints one URL: HAProxy in front of two gateways, three members, two cores", async () => {
    expect(output).toMatch(new RegExp(`rms: ready: https://localhost:${port}/v1 \\(HAProxy in front of 2 gateways`));
    expect(memberPorts).toHaveLength(3);
    expect(new Set(coreAddrs).size).toBe(2);
    expect(new Set(gatewayPorts).size).toBe(2);
    const status = await call(client(), port, "GET", "/v1/status");
    expect(status.status).toBe(200);
    expect(JSON.parse(status.body)).toMatchObject({ status: "operational" });
  });

  it("passes each client's own address to the gateways (PROXY protocol): one address's limit does not touch another's", async () => {
    // RATE_LIMIT_ADDRESS per second per client address: 127.0.0.3 uses up its own, 127.0.0.4 is untouched.
    const crowded = client("127.0.0.3");
    // Bursts of three seconds' worth at once, until one is refused: on a busy machine a burst can take longer than
    // the window it should overrun, so one burst alone may pass whole (no timing is assumed, only a bound on tries).
    let refused = 0;
    for (let burst = 0; burst < 10 && refused === 0; burst++) {
      const replies = await Promise.all(Array.from({ length: RATE_LIMIT_ADDRESS * 3 }, () => call(crowded, port, "GET", "/v1/status")));
      refused = replies.filter((r) => r.status === 429).length;
    }
    expect(refused).toBeGreaterThan(0);
    expect((await call(client("127.0.0.4"), port, "GET", "/v1/status")).status).toBe(200);
  });

  it("holds one key's rate limit across both gateways (the shared store): at most the limit per clock second", async () => {
    const { secret } = await newKey(coreAddrs[0]!, true);
    // Each gateway directly, four clients each (distinct addresses, so the per-address limit is not what refuses).
    const agents = gatewayPorts.map((_, g) => [1, 2, 3, 4].map((c) => client(`127.0.${g + 2}.${c}`)));
    const answers: Reply[][] = [[], []];
    const started = Date.now();
    // Bursts of twice the limit at each gateway at once, until one is refused: clients that wait for each answer never
    // pass the limit when a busy machine answers fewer than it per second.
    for (let burst = 0; burst < 10 && !answers.flat().some((r) => r.status === 429); burst++) {
      await Promise.all(
        gatewayPorts.map(async (gatewayPort, g) => {
          const burstOf = Array.from({ length: RATE_LIMIT_LIVE * 2 }, (_, i) =>
            call(agents[g]![i % 4]!, gatewayPort, "GET", "/v1/resources?limit=1", { key: secret }),
          );
          answers[g]!.push(...(await Promise.all(burstOf)));
        }),
      );
    }
    const ended = Date.now();
    const allowed = answers.map((a) => a.filter((r) => r.status === 200).length);
    const limited = answers.flat().filter((r) => r.status === 429);
    // Tolerance: the windows are whole clock seconds, so a run touching k of them allows at most k times the limit.
    const windows = Math.floor(ended / 1000) - Math.floor(started / 1000) + 1;
    process.stderr.write(
      `rate limit across 2 gateways: ${allowed.join(" + ")} = ${allowed[0]! + allowed[1]!} allowed in ${windows} windows (limit ${RATE_LIMIT_LIVE}/s, ` +
        `so at most ${RATE_LIMIT_LIVE * windows}); ${limited.length} refused with 429\n`,
    );
    expect(allowed.every((n) => n > 0)).toBe(true);
    expect(allowed[0]! + allowed[1]!).toBeLessThanOrEqual(RATE_LIMIT_LIVE * windows);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited.every((r) => Number(r.headers["retry-after"]) >= 1)).toBe(true);
    // The RateLimit headers (CONTRACT.md section 12) come from the same shared bucket on both gateways: every answer
    // names the policy, an allowed one what is left of this second's limit, a 429 none left until its Retry-After.
    for (const reply of answers.flat()) expect(reply.headers["ratelimit-policy"]).toBe(`"key";q=${RATE_LIMIT_LIVE};w=1`);
    const left = (reply: Reply) => Number(/^"key";r=(\d+);t=(\d+)$/.exec(String(reply.headers["ratelimit"]))?.[1] ?? Number.NaN);
    for (const reply of limited) expect(reply.headers["ratelimit"]).toBe(`"key";r=0;t=${reply.headers["retry-after"]}`);
    for (const gateway of answers) {
      const remaining = gateway.filter((r) => r.status === 200).map(left);
      expect(remaining.every((r) => r >= 0 && r < RATE_LIMIT_LIVE)).toBe(true);
    }
    // One bucket for both gateways: each slot of a window is taken once, whichever gateway takes it, so each value
    // of r is answered at most once per window across both (two buckets would answer r=q-1 twice in every window).
    const times = new Map<number, number>();
    for (const r of answers
      .flat()
      .filter((reply) => reply.status === 200)
      .map(left))
      times.set(r, (times.get(r) ?? 0) + 1);
    for (const [r, count] of times) expect(count, `r=${r}`).toBeLessThanOrEqual(windows);
  });

  it("refuses a key revoked through one core at both gateways", async () => {
    const key = await newKey(coreAddrs[1]!, false);
    const agent = client("127.0.0.5");
    for (const gatewayPort of gatewayPorts) expect((await call(agent, gatewayPort, "GET", "/v1/resources?limit=1", { key: key.secret })).status).toBe(200);
    const service = admin(coreAddrs[0]!);
    await service.revokeKey({ keyId: key.id, reason: "test" });
    service.close();
    for (const gatewayPort of gatewayPorts) {
      const reply = await call(agent, gatewayPort, "GET", "/v1/resources?limit=1", { key: key.secret });
      expect(reply.status).toBe(401);
      expect(JSON.parse(reply.body).error.code).toBe("api_key_revoked");
    }
  });

  it("under a stream of creates with Idempotency-Keys, a stepped-down and then a SIGKILLed primary: 201 or 503 (or 409 in flight), never a lie; " +
    "retries give the same resources; none acknowledged is lost", async () => {
    const { secret } = await newKey(coreAddrs[0]!, false);
    const answers: { key: string; status: number; code?: string; id?: string; retryAfter?: string }[] = [];
    let networkErrors = 0;
    let n = 0;
    let streaming = true;
    const stream = async (c: number) => {
      const agent = client(`127.0.1.${c + 1}`);
      while (streaming) {
        const key = `elect-${n++}`;
        const reply = await call(agent, port, "POST", "/v1/resources", { key: secret, form: `name=${key}`, idempotencyKey: key }).catch(() => undefined);
        if (!reply) {
          networkErrors++;
          answers.push({ key, status: 0 });
          await sleep(100);
          continue;
        }
        const body = JSON.parse(reply.body) as { id?: string; error?: { code: string } };
        answers.push({
          key,
          status: reply.status,
          ...(body.id ? { id: body.id } : {}),
          ...(body.error ? { code: body.error.code } : {}),
          ...(reply.headers["retry-after"] ? { retryAfter: String(reply.headers["retry-after"]) } : {}),
        });
        if (reply.status !== 201) await sleep(100);
      }
    };
    const clients = Array.from({ length: 8 }, (_, c) => stream(c));
    await sleep(3_000);

    // 1. replSetStepDown: the primary hands over and may not stand again for 10 s.
    const first = await primaryPort();
    const stepDown = new MongoClient(`mongodb://127.0.0.1:${first}/?directConnection=true`);
    await stepDown.db("admin").command({ replSetStepDown: 10, secondaryCatchUpPeriodSecs: 5 });
    await stepDown.close();
    const second = await primaryPort();
    expect(second).not.toBe(first);
    await sleep(6_000);

    // 2. SIGKILL of the new primary: another is elected; `rms cluster` starts the killed one again on its files.
    await healthy();
    process.kill(mongodPid(second), "SIGKILL");
    const third = await primaryPort();
    expect(third).not.toBe(second);
    await sleep(8_000);
    streaming = false;
    await Promise.all(clients);
    await healthy();
    expect(output).toMatch(/database member \d \(127\.0\.0\.1:\d+\) exited \(SIGKILL\); starting it again on its files/);

    const byStatus = answers.reduce<Record<string, number>>((counts, a) => {
      const kind = a.status === 0 ? "no answer" : `${a.status}${a.code ? ` ${a.code}` : ""}`;
      counts[kind] = (counts[kind] ?? 0) + 1;
      return counts;
    }, {});
    process.stderr.write(`creates during a step-down and a SIGKILL of the primary: ${answers.length} requests, ${JSON.stringify(byStatus)}\n`);
    // Every answer is a success, a 503 with Retry-After, or a key still in flight (or a write whose outcome core
    // could not know, 500 outcome_unknown, which says so); never a 500 internal_error.
    for (const a of answers.filter((a) => a.status !== 0)) {
      expect(
        a.status === 201 ||
          (a.status === 503 && a.code === "service_unavailable") ||
          (a.status === 409 && a.code === "idempotency_key_in_use") ||
          a.code === "outcome_unknown",
        `${JSON.stringify(a)}; the processes' last error lines:\n${errorLines.join("\n")}`,
      ).toBe(true);
      if (a.status === 503) expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    expect(byStatus["201"] ?? 0).toBeGreaterThan(0);
    expect(networkErrors).toBeLessThan(answers.length / 10);

    // After the election: every key again. A key answered 201 replays the same resource; the others complete now.
    const agent = client("127.0.1.200");
    const created = new Map(answers.filter((a) => a.status === 201).map((a) => [a.key, a.id!]));
    const keys = [...new Set(answers.map((a) => a.key))];
    const finalIds = new Map<string, string>();
    const replays = { replayed: 0, "executed again": 0 };
    for (const key of keys) {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const reply = await call(agent, port, "POST", "/v1/resources", { key: secret, form: `name=${key}`, idempotencyKey: key }).catch(() => undefined);
        if (reply?.status === 201) {
          finalIds.set(key, (JSON.parse(reply.body) as { id: string }).id);
          // Replayed from core's record of the key; or, when an election failed that record's write (sent beside
          // the answer: the lock then ends), executed again and answered by core's idempotent create with the same
          // resource (checked below).
          if (created.has(key)) replays[reply.headers["idempotent-replayed"] === "true" ? "replayed" : "executed again"]++;
          break;
        }
        if (Date.now() > deadline) throw new Error(`${key}: ${reply?.status} ${reply?.body}`);
        await sleep(500);
      }
      if (created.has(key)) expect(finalIds.get(key)).toBe(created.get(key));
    }
    process.stderr.write(`retries of the acknowledged creates after the election: ${JSON.stringify(replays)}\n`);
    expect(replays.replayed).toBeGreaterThan(0);
    // Nothing acknowledged is missing, and each key made one resource.
    const listed: { id: string; name: string }[] = [];
    for (let after = ""; ; ) {
      // The keys above were sent one after another from one address, so its per-address limit (RATE_LIMIT_ADDRESS
      // per second) may refuse a page with 429: wait as Retry-After says and ask again.
      const path = `/v1/resources?limit=100${after ? `&starting_after=${after}` : ""}`;
      let reply = await call(agent, port, "GET", path, { key: secret });
      for (let tries = 0; reply.status === 429 && tries < 10; tries++) {
        await sleep(Number(reply.headers["retry-after"] ?? 1) * 1000);
        reply = await call(agent, port, "GET", path, { key: secret });
      }
      expect(reply.status, reply.body).toBe(200);
      const page = JSON.parse(reply.body) as { data: { id: string; name: string }[]; has_more: boolean };
      listed.push(...page.data);
      if (!page.has_more) break;
      after = page.data.at(-1)!.id;
    }
    const ids = new Set(listed.map((r) => r.id));
    expect([...created.values()].filter((id) => !ids.has(id))).toEqual([]);
    expect(listed.length).toBe(keys.length);
    expect(new Set(listed.map((r) => r.name)).size).toBe(keys.length);
    // The database agrees: every member has them (majority writes, and the killed member caught up).
    const reader = new MongoClient(mongoUri);
    expect(
      await reader
        .db("rms")
        .collection("resources")
        .countDocuments({ _id: { $in: [...created.values()] } as never }),
    ).toBe(created.size);
    await reader.close();
  }, 300_000);

  it("stops everything on SIGTERM: exit 0, no process of the cluster left", async () => {
    stopping = true;
    cluster.kill("SIGTERM");
    const code = await Promise.race([exited, sleep(90_000).then(() => "still running")]);
    expect(code).toBe(0);
    expect(clusterProcesses()).toEqual([]);
  }, 120_000);
});
