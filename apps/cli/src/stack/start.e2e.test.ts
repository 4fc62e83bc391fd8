import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Agent, request } from "node:https";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "./processes.js";

const bin = new URL("../../bin/rms.js", import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), "rms-stack-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

interface Stack {
  child: ChildProcess;
  output: () => string;
  /** Standard output alone: the JSON log stream. */
  stdout: () => string;
  exited: Promise<number | null>;
}

/** `rms start` (what `npm start` runs) as a real process on free ports and a temporary data dir. */
async function startStack(ports: { https: number; http: number; core: number }): Promise<Stack> {
  let output = "";
  let stdout = "";
  const child = spawn(process.execPath, [bin, "start"], {
    env: { ...process.env, MONGODB_URI: "", RMS_ADMIN_TOKEN: "", RMS_DATA_DIR: dataDir, PORT: String(ports.https), HTTP_PORT: String(ports.http), CORE_ADDR: `127.0.0.1:${ports.core}`, METRICS_PORT: "0", CORE_METRICS_PORT: "0", LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => ((output += d), (stdout += d)));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + 120_000;
  while (!output.includes("rms: ready")) {
    if (child.exitCode !== null) throw new Error(`rms start exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`rms start not ready:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { child, output: () => output, stdout: () => stdout, exited };
}

/** Processes (other than this one) whose command line mentions `path`: what a stack left running. */
function processesUsing(path: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)) {
    try {
      const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
      if (command.includes(path)) found.push(`pid ${pid}: ${command.slice(0, 120)}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
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

function call(port: number, path: string, key: string, body?: string) {
  const ca = readFileSync(join(dataDir, "tls", "cert.pem"));
  return new Promise<{ status: number; json: any }>((resolve, reject) => {
    const req = request(
      { host: "localhost", port, path, method: body ? "POST" : "GET", agent: new Agent({ ca }), headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/x-www-form-urlencoded" } : {}) } },
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
    // The printed certificate path works from where npm start ran (the same directory as this test).
    const cacert = /curl --cacert (\S+) /.exec(first.output())?.[1];
    expect(cacert && resolve(cacert)).toBe(join(dataDir, "tls", "cert.pem"));
    expect(first.output()).toContain(`https://localhost:${ports.https}/v1/resources -H "Authorization: Bearer ${key}"`);

    const created = await call(ports.https, "/v1/resources", key!, "name=My+first+resource");
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ object: "resource", name: "My first resource", status: "active" });

    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    for (const port of Object.values(ports)) expect(await portClosed(port), `port ${port} still open`).toBe(true);

    const second = await startStack(ports);
    expect(second.output()).not.toMatch(/sk_test_/);
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
    const deadline = Date.now() + 60_000;
    const leftovers = async () => {
      const open = [];
      for (const port of Object.values(ports)) if (!(await portClosed(port))) open.push(`port ${port}`);
      return [...open, ...processesUsing(dataDir)];
    };
    let left = await leftovers();
    while (left.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      left = await leftovers();
    }
    expect(left).toEqual([]);
  }, 180_000);

  it("refuses a wrong environment value with one line naming the variable", async () => {
    const child = spawn(process.execPath, [bin, "start"], { env: { ...process.env, PORT: "not-a-port", RMS_DATA_DIR: dataDir }, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const code = await new Promise((resolve) => child.once("exit", resolve));
    expect(code).toBe(2);
    expect(stderr).toBe("rms: PORT must be a port number\n");
  });
});
