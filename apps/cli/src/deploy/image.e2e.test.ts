// The image's commands, run as the image runs them (`node deploy/image/rms-entrypoint.mjs <command>`, with the
// variables the Helm chart gives each process): core with mutual TLS, a worker and a gateway over the test
// database, each found alive and ready by the chart's own probes, then stopped by SIGTERM with exit code 0.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeTestPki, type TestPki } from "@rms/core/testing";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { repoRoot } from "../paths.js";
import { ADMIN_TOKEN, freePort, GATEWAY_TOKEN } from "../stack/processes.js";

const ENTRYPOINT = join(repoRoot, "deploy", "image", "rms-entrypoint.mjs");
const SECRET_KEY = "a".repeat(64);

interface Running {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  output(): string;
}

/** `node rms-entrypoint.mjs <args>` with exactly `env` (and PATH), as a container runs it. */
function image(args: readonly string[], env: Record<string, string>): Running {
  const child = spawn(process.execPath, [ENTRYPOINT, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, exited, output: () => output };
}

async function run(args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const running = image(args, env);
  const code = await running.exited;
  return { code, output: running.output() };
}

function httpsStatus(pki: TestPki, port: number, path: string): Promise<number> {
  const agent = new Agent({ ca: readFileSync(pki.caFile), keepAlive: false });
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, agent, timeout: 5_000 }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

describe("the image's commands", () => {
  const dir = mkdtempSync(join(tmpdir(), "rms-image-"));
  const databaseName = testDatabaseName("image");
  const started: Running[] = [];
  let pki: TestPki;
  let coreEnv: Record<string, string>;
  let workerEnv: Record<string, string>;
  let gatewayEnv: Record<string, string>;
  let gatewayPort: number;

  beforeAll(async () => {
    pki = await writeTestPki(join(dir, "pki"));
    const tls = { CORE_TLS_CERT_FILE: pki.certFile, CORE_TLS_KEY_FILE: pki.keyFile, CORE_TLS_CA_FILE: pki.caFile };
    const database = { MONGODB_URI: inject("mongoUri"), MONGODB_DATABASE: databaseName, LOG_LEVEL: "warn" };
    const coreAddr = `127.0.0.1:${await freePort()}`;
    gatewayPort = await freePort();
    coreEnv = {
      ...database,
      ...tls,
      CORE_ADDR: coreAddr,
      CORE_METRICS_PORT: "0",
      RMS_ADMIN_TOKEN: ADMIN_TOKEN,
      RMS_GATEWAY_TOKEN: GATEWAY_TOKEN,
      RMS_SECRET_KEY: SECRET_KEY,
    };
    workerEnv = { ...database, WORKER_METRICS_PORT: String(await freePort()), RMS_SECRET_KEY: SECRET_KEY };
    gatewayEnv = {
      ...database,
      ...tls,
      CORE_ADDR: coreAddr,
      RMS_GATEWAY_TOKEN: GATEWAY_TOKEN,
      PORT: String(gatewayPort),
      HTTP_PORT: "0",
      METRICS_PORT: String(await freePort()),
      TLS_CERT_FILE: pki.certFile,
      TLS_KEY_FILE: pki.keyFile,
      RATE_LIMIT_STORE: "mongodb",
    };
  });

  afterAll(async () => {
    for (const running of started) if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses an unknown command with the list of commands", async () => {
    const { code, output } = await run(["server"], {});
    expect(code).toBe(64);
    expect(output).toBe("rms-entrypoint: unknown command server; one of: gateway, core, worker, rms, probe\n");
  });

  it("runs rms, the operator CLI", async () => {
    const { code, output } = await run(["rms", "--version"], {});
    expect(code).toBe(0);
    expect(output.trim()).toBe((JSON.parse(readFileSync(join(repoRoot, "apps", "cli", "package.json"), "utf8")) as { version: string }).version);
  });

  it("runs core, a worker and a gateway that the chart's probes find alive and ready, and stops each by SIGTERM", { timeout: 120_000 }, async () => {
    // Nothing listening yet: the probes fail, with one line.
    const down = await run(["probe", "core-ready"], coreEnv);
    expect(down.code).toBe(1);
    expect(down.output).toMatch(/^probe: core health: .+\n$/);
    expect((await run(["probe", "worker"], workerEnv)).code).toBe(1);

    const core = image(["core"], coreEnv);
    started.push(core);
    await eventually(
      async () => {
        const ready = await run(["probe", "core-ready"], coreEnv);
        expect(ready, core.output()).toEqual({ code: 0, output: "" });
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(await run(["probe", "core-live"], coreEnv)).toEqual({ code: 0, output: "" });

    const worker = image(["worker"], workerEnv);
    started.push(worker);
    await eventually(async () => expect(await run(["probe", "worker"], workerEnv), worker.output()).toEqual({ code: 0, output: "" }), {
      timeoutMs: 60_000,
      intervalMs: 500,
    });

    const gateway = image(["gateway"], gatewayEnv);
    started.push(gateway);
    // The readiness path (core and MongoDB up) and the liveness path.
    await eventually(async () => expect(await httpsStatus(pki, gatewayPort, "/v1/status").catch(() => 0), gateway.output()).toBe(200), {
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    expect(await httpsStatus(pki, gatewayPort, "/v1/openapi.json")).toBe(200);

    // The operator's path: rms through the image, over mutual TLS with the admin token.
    const rms = await run(["rms", "accounts", "list", "--json"], {
      CORE_ADDR: coreEnv.CORE_ADDR!,
      RMS_ADMIN_TOKEN: ADMIN_TOKEN,
      CORE_TLS_CERT_FILE: pki.certFile,
      CORE_TLS_KEY_FILE: pki.keyFile,
      CORE_TLS_CA_FILE: pki.caFile,
    });
    expect(rms.code, rms.output).toBe(0);

    for (const running of [gateway, worker, core]) {
      running.child.kill("SIGTERM");
      expect(await running.exited, running.output()).toBe(0);
    }
  });
});
