import { execFile, spawn } from "node:child_process";
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import { Agent, request } from "node:https";
import { promisify } from "node:util";
import { writeTestPki } from "@rms/core/testing";
import { eventually } from "@rms/test-db/testkit";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { RMS_BIN, startRms, stackEnv, type Ports, type RmsStart } from "../testutil/rms-start.js";
import { freePort } from "./processes.js";

const run = promisify(execFile);

const dataDir = mkdtempSync(join(tmpdir(), "rms-stack-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
// A failed test must not leave its stack holding the data directory for the next one.
const started: RmsStart[] = [];
afterEach(async () => {
  for (const stack of started.splice(0)) {
    if (stack.child.exitCode !== null || stack.child.signalCode !== null) continue;
    stack.child.kill("SIGTERM");
    await stack.exited;
  }
});

/** `rms start` (what `npm start` runs) on `ports` and the test's data directory; `npm: true` runs `npm start` itself. */
const startStack = (ports: Ports, options: { npm?: boolean; env?: Record<string, string> } = {}) =>
  startRms({ ...stackEnv(ports, dataDir), ...options.env }, { npm: options.npm, started: (stack) => started.push(stack) });

/** Processes (other than this one) whose command line or environment mentions `path`: what a stack left running. */
function processesUsing(path: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)) {
    try {
      const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
      const environment = readFileSync(`/proc/${pid}/environ`, "utf8");
      if (command.includes(path) || environment.includes(`=${path}\0`)) found.push(`pid ${pid}: ${command.slice(0, 120)}`);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** The environments of this stack's processes (RMS_DATA_DIR is ours) whose command line mentions `script`. */
function environmentsOf(script: string): string[][] {
  const found: string[][] = [];
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const environment = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(script) && environment.includes(`RMS_DATA_DIR=${dataDir}`)) found.push(environment);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

/** The environment of this stack's process whose command line mentions `script`. */
function environmentOf(script: string): string[] {
  const [environment] = environmentsOf(script);
  if (!environment) throw new Error(`no process running ${script}`);
  return environment;
}

/** A free port whose next port is free too (for a base port that two workers count up from). */
async function freePortPair(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port < 65535 && (await portClosed(port + 1))) return port;
  }
}

/** What is left of a stack on `ports` with data in `dataDir`, polled until nothing or a minute has passed. */
async function leftoversAfterStop(ports: Record<string, number>): Promise<string[]> {
  const leftovers = async () => {
    const open = [];
    for (const port of Object.values(ports)) if (!(await portClosed(port))) open.push(`port ${port}`);
    return [...open, ...processesUsing(dataDir)];
  };
  // The caller asserts on the list, so a timeout here returns what is still left rather than throwing.
  return eventually(
    async () => {
      const left = await leftovers();
      expect(left).toEqual([]);
      return left;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  ).catch(() => leftovers());
}

/** Every directory under `dir` (itself included) with a mode other than 0700, every file other than 0600. */
function notPrivate(dir: string): string[] {
  const wrong: string[] = [];
  const visit = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return;
    const mode = stat.mode & 0o777;
    if (stat.isDirectory()) {
      if (mode !== 0o700) wrong.push(`${path} ${mode.toString(8)}`);
      for (const name of readdirSync(path)) visit(join(path, name));
    } else if (mode !== 0o600) wrong.push(`${path} ${mode.toString(8)}`);
  };
  visit(dir);
  return wrong;
}

/** True when nothing accepts connections on the port any more (its process is gone). */
function portClosed(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });
}

// biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies; each assertion states the shape it expects.
type Json = any;

function call(port: number, path: string, key: string, body?: string) {
  const ca = readFileSync(join(dataDir, "tls", "cert.pem"));
  return new Promise<{ status: number; json: Json }>((resolve, reject) => {
    const req = request(
      {
        host: "localhost",
        port,
        path,
        method: body ? "POST" : "GET",
        agent: new Agent({ ca }),
        headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/x-www-form-urlencoded" } : {}) },
      },
      (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("npm start (rms start)", () => {
  it("first start on an empty database prints a test key and a working curl line; SIGTERM stops everything; a restart keeps the data", async () => {
    const ports = { https: await freePort(), http: await freePort(), core: await freePort() };
    const first = await startStack(ports);
    const key = /\b(sk_test_[0-9A-Za-z]{32})\b/.exec(first.output())?.[1];
    expect(key, first.output()).toBeDefined();
    // The banner is for the terminal (stderr), never in the JSON log stream on stdout.
    expect(first.stdout()).not.toContain(key);
    // The printed certificate path is absolute: the curl line works pasted in any directory.
    const cacert = /curl --cacert (\S+) /.exec(first.output())?.[1];
    expect(cacert).toBe(join(dataDir, "tls", "cert.pem"));
    expect(isAbsolute(cacert!)).toBe(true);
    // The operator's ports come with the rest (here all 0: free ones, as the test asks).
    expect(first.output()).toContain(
      `rms: operator: core gRPC (npx rms) at 127.0.0.1:${ports.core}; /metrics on 127.0.0.1: gateway a free port, core a free port, worker-1 a free port`,
    );
    expect(first.output()).toContain(`https://localhost:${ports.https}/v1/resources -H "Authorization: Bearer ${key}"`);
    // Beside it, the dashboard's sign-in link: a restricted key in the fragment, for the terminal only.
    const dashboardKey = new RegExp(`https://localhost:${ports.https}/dashboard/#key=(rk_test_[0-9A-Za-z]{32})`).exec(first.output())?.[1];
    expect(dashboardKey, first.output()).toBeDefined();
    expect(first.stdout()).not.toContain(dashboardKey);

    // Least privilege: the gateway runs with a token of its own and without the admin token.
    const adminToken = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
    const gatewayToken = readFileSync(join(dataDir, "gateway-token"), "utf8").trim();
    const gatewayEnvironment = environmentOf("apps/gateway/dist/main.js");
    expect(gatewayEnvironment).toContain(`RMS_GATEWAY_TOKEN=${gatewayToken}`);
    expect(gatewayEnvironment.filter((entry) => entry.startsWith("RMS_ADMIN_TOKEN=") || entry.includes(adminToken))).toEqual([]);
    // A worker runs (WORKERS defaults to 1) with the generated key that seals webhook secrets, and no credential for core.
    const secretKey = readFileSync(join(dataDir, "secret-key"), "utf8").trim();
    const workerEnvironment = environmentOf("apps/core/dist/worker/main.js");
    expect(workerEnvironment).toContain(`RMS_SECRET_KEY=${secretKey}`);
    expect(workerEnvironment.filter((entry) => /^RMS_(ADMIN|GATEWAY)_TOKEN=/.test(entry))).toEqual([]);
    expect(environmentOf("apps/core/dist/main.js")).toContain(`RMS_SECRET_KEY=${secretKey}`);
    // Core's caller table for internal services: an empty one in the data directory, and core's pid to SIGHUP it with.
    expect(JSON.parse(readFileSync(join(dataDir, "clients.json"), "utf8"))).toEqual({ clients: [] });
    expect(environmentOf("apps/core/dist/main.js")).toContain(`CORE_CLIENTS_FILE=${join(dataDir, "clients.json")}`);
    const corePid = Number(readFileSync(join(dataDir, "core.pid"), "utf8"));
    expect(readFileSync(`/proc/${corePid}/cmdline`, "utf8")).toContain("apps/core/dist/main.js");

    const created = await call(ports.https, "/v1/resources", key!, "name=My+first+resource");
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ object: "resource", name: "My first resource", status: "active" });

    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    for (const port of Object.values(ports)) expect(await portClosed(port), `port ${port} still open`).toBe(true);
    expect(existsSync(join(dataDir, "core.pid"))).toBe(false);
    // Database files hold key hashes and recorded responses: the whole data directory is owner-only.
    expect(notPrivate(dataDir)).toEqual([]);

    const second = await startStack(ports);
    expect(second.output()).not.toMatch(/sk_test_|rk_test_/);
    const fetched = await call(ports.https, `/v1/resources/${created.json.id}`, key!);
    expect(fetched.json).toEqual(created.json);
    second.child.kill("SIGINT");
    expect(await second.exited).toBe(0);
  }, 240_000);

  it("leaves no process behind even when it is itself killed with SIGKILL", async () => {
    const ports = { https: await freePort(), http: await freePort(), core: await freePort() };
    const stack = await startStack(ports);
    stack.child.kill("SIGKILL");
    await stack.exited;
    // Core and gateway see their stdin pipe close; the database child was started with a parent-death signal.
    expect(await leftoversAfterStop(ports)).toEqual([]);
  }, 180_000);

  it("WORKERS=2: each worker serves its own /metrics on loopback, on WORKER_METRICS_PORT and the port after it", async () => {
    const ports = { https: await freePort(), http: await freePort(), core: await freePort() };
    const base = await freePortPair();
    const stack = await startStack(ports, { env: { WORKERS: "2", WORKER_METRICS_PORT: String(base) } });
    expect(stack.output()).toContain(`worker-1 ${base}, worker-2 ${base + 1}`);
    // Read until both workers are there: on a loaded machine a worker may still be starting when `ready` is printed.
    await eventually(
      () => {
        const workerPorts = environmentsOf("apps/core/dist/worker/main.js")
          .map((environment) => environment.find((entry) => entry.startsWith("WORKER_METRICS_PORT=")))
          .sort();
        expect(workerPorts).toEqual([`WORKER_METRICS_PORT=${base}`, `WORKER_METRICS_PORT=${base + 1}`]);
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    // A worker serves /metrics as it starts and registers the deliveries' counters once its queue is open: read until they are there.
    for (const port of [base, base + 1]) {
      await eventually(
        async () => {
          const response = await fetch(`http://127.0.0.1:${port}/metrics`);
          expect(response.status).toBe(200);
          expect(await response.text()).toContain("webhook_deliveries_claimed_total");
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );
    }
    stack.child.kill("SIGTERM");
    expect(await stack.exited).toBe(0);
  }, 180_000);

  it("`npm start` stops everything when npm itself gets SIGTERM", async () => {
    const ports = { https: await freePort(), http: await freePort(), core: await freePort() };
    const stack = await startStack(ports, { npm: true });
    // The signal goes to npm, not to the launcher: npm must be waiting on the launcher itself (exec) and pass it on.
    stack.child.kill("SIGTERM");
    await stack.exited;
    expect(await leftoversAfterStop(ports)).toEqual([]);
    expect(stack.output()).toContain("rms: SIGTERM: stopping");
  }, 300_000);

  it("`npm start` leaves nothing behind when npm is SIGKILLed", async () => {
    const ports = { https: await freePort(), http: await freePort(), core: await freePort() };
    const stack = await startStack(ports, { npm: true });
    stack.child.kill("SIGKILL");
    await stack.exited;
    // The launcher sees it has lost its parent; its children then see the launcher go.
    expect(await leftoversAfterStop(ports)).toEqual([]);
  }, 300_000);

  it("with CORE_TLS_* set, core speaks only mutual TLS and the gateway and rms present their certificates", async () => {
    const pki = await writeTestPki(join(dataDir, "test-pki"));
    const tlsEnv = { CORE_TLS_CERT_FILE: pki.certFile, CORE_TLS_KEY_FILE: pki.keyFile, CORE_TLS_CA_FILE: pki.caFile };
    const ports = { https: await freePort(), http: await freePort(), core: await freePort() };
    const stack = await startStack(ports, { env: tlsEnv });
    const rms = (...args: string[]) =>
      run(process.execPath, [RMS_BIN, ...args], {
        env: { ...process.env, ...tlsEnv, RMS_ADMIN_TOKEN: "", RMS_DATA_DIR: dataDir, CORE_ADDR: `127.0.0.1:${ports.core}` },
      });
    const account = JSON.parse((await rms("accounts", "create", "--json")).stdout);
    const key = JSON.parse((await rms("keys", "create", "--account", account.id, "--kind", "secret", "--mode", "test", "--json")).stdout);
    // Through the gateway, which reaches core over TLS with its client certificate.
    expect((await call(ports.https, "/v1/resources", key.secret, "name=over+mTLS")).status).toBe(201);
    // Without a certificate rms cannot get in.
    const plaintext = await run(process.execPath, [RMS_BIN, "accounts", "list"], {
      env: { ...process.env, RMS_ADMIN_TOKEN: "", RMS_DATA_DIR: dataDir, CORE_ADDR: `127.0.0.1:${ports.core}` },
    }).catch((e: unknown) => e);
    expect(plaintext).toMatchObject({ code: 1, stderr: expect.stringContaining("cannot reach the core") });
    stack.child.kill("SIGTERM");
    expect(await stack.exited).toBe(0);
  }, 180_000);

  it("refuses a wrong environment value with one line naming the variable", async () => {
    const child = spawn(process.execPath, [RMS_BIN, "start"], {
      env: { ...process.env, PORT: "not-a-port", RMS_DATA_DIR: dataDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const code = await new Promise((resolve) => child.once("exit", resolve));
    expect(code).toBe(2);
    expect(stderr).toBe("rms: PORT must be a port number\n");
  });
});
