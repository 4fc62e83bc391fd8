// Test-only: the stack a developer's tools talk to, as real processes (core, a gateway that can be restarted on its
// port, a worker when asked) on the test run's mongod, with a test-mode key; and the CLI as a real process.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KeyKind } from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import { dropDatabase, eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { expect, inject } from "vitest";
import type { Child } from "../stack/children.js";
import { adminClient, freePort, httpsCall, type HttpsReply, startCoreProcess, startGatewayProcess, startWorkerProcess } from "../stack/processes.js";
import { RMS_BIN } from "./rms-start.js";

export interface DeveloperStack {
  readonly gatewayPort: number;
  readonly dataDir: string;
  /** A test-mode secret key of the stack's account, and its id. */
  readonly key: string;
  readonly keyId: string;
  readonly mongoUri: string;
  readonly databaseName: string;
  /** The development certificate the gateway serves (what `rms` trusts by itself for a localhost base). */
  readonly certificate: string;
  /** What the CLI needs to reach the gateway: RMS_API_KEY, RMS_API_BASE and RMS_DATA_DIR (for the certificate). */
  readonly cliEnv: Record<string, string>;
  /** One HTTPS call of the API with the key. */
  call(method: string, path: string, options?: { form?: string; headers?: Record<string, string>; port?: number }): Promise<HttpsReply>;
  /** Creates a resource (retried under its Idempotency-Key while the gateway is away or busy); answers its id. */
  createResource(name: string, port?: number): Promise<string>;
  /** Stops the gateway (its streams end), runs `meanwhile` with a second gateway's port, starts the gateway again on its port. */
  restartGateway(meanwhile: (otherPort: number) => Promise<void>): Promise<void>;
  revokeKey(): Promise<void>;
  stop(): Promise<void>;
}

/** Settings every gateway of the stack gets: a test key's rate limit no test of a hundred creates meets. */
const GATEWAY_ENV = { RATE_LIMIT_TEST: "1000", RATE_LIMIT_ADDRESS: "10000" };

export async function startDeveloperStack(options: { worker?: boolean; name: string }): Promise<DeveloperStack> {
  const mongoUri = inject("mongoUri");
  const databaseName = testDatabaseName(options.name);
  const dataDir = mkdtempSync(join(tmpdir(), `rms-${options.name}-`));
  const children: Child[] = [];
  const corePort = await freePort();
  const coreAddr = `127.0.0.1:${corePort}`;
  const settings = { WEBHOOK_ALLOW_PRIVATE: "true", RMS_SECRET_KEY: "0".repeat(64) };
  children.push(await startCoreProcess({ mongoUri, databaseName, port: corePort, env: settings }));
  if (options.worker) children.push(startWorkerProcess({ mongoUri, databaseName, env: settings }));
  const gatewayPort = await freePort();
  const startGateway = (port: number) => startGatewayProcess({ coreAddr, mongoUri, databaseName, dataDir, port, env: GATEWAY_ENV });
  let gateway = await startGateway(gatewayPort);

  const admin = adminClient(coreAddr);
  const { account } = await admin.createAccount({});
  const created = await admin.createKey({ accountId: account!.id, kind: KeyKind.SECRET, livemode: false });
  const key = created.secret;
  const keyId = created.key!.id;

  const call: DeveloperStack["call"] = (method, path, callOptions = {}) =>
    httpsCall(dataDir, callOptions.port ?? gatewayPort, method, path, {
      key,
      ...(callOptions.form !== undefined ? { form: callOptions.form } : {}),
      headers: callOptions.headers ?? {},
    });

  const createResource: DeveloperStack["createResource"] = async (name, port) => {
    const idempotencyKey = `dev-${name}-${Math.random().toString(36).slice(2)}`;
    for (;;) {
      const reply = await call("POST", "/v1/resources", {
        form: `name=${encodeURIComponent(name)}`,
        headers: { "idempotency-key": idempotencyKey },
        ...(port ? { port } : {}),
      }).catch(() => null);
      if (reply?.status === 201) return JSON.parse(reply.body).id as string;
      if (reply && ![409, 429, 500, 503].includes(reply.status)) throw new Error(`create ${name}: ${reply.status} ${reply.body}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  return {
    gatewayPort,
    dataDir,
    key,
    keyId,
    mongoUri,
    databaseName,
    certificate: readFileSync(join(dataDir, "tls", "cert.pem"), "utf8"),
    cliEnv: { RMS_API_KEY: key, RMS_API_BASE: `https://localhost:${gatewayPort}`, RMS_DATA_DIR: dataDir },
    call,
    createResource,
    async restartGateway(meanwhile) {
      const otherPort = await freePort();
      const other = await startGateway(otherPort);
      try {
        await gateway.stop(10_000);
        await meanwhile(otherPort);
      } finally {
        await other.stop(10_000);
      }
      gateway = await startGateway(gatewayPort);
    },
    async revokeKey() {
      await admin.revokeKey({ keyId, reason: "test" });
    },
    async stop() {
      admin.close();
      await gateway.stop(10_000);
      for (const child of children.reverse()) await child.stop(10_000);
      await dropDatabase(mongoUri, databaseName);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** `rms <args>` as a real process, its output read as it comes. */
export interface CliProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** The lines of stdout so far. */
  lines(): string[];
  readonly exited: Promise<number | null>;
  /** Waits until stdout (or stderr) matches `pattern`; answers the match. */
  waitFor(pattern: RegExp, stream?: "stdout" | "stderr", timeoutMs?: number): Promise<RegExpMatchArray>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

export function runRms(args: readonly string[], env: Record<string, string>): CliProcess {
  const child = spawn(process.execPath, [RMS_BIN, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    lines: () => out.split("\n").filter(Boolean),
    exited,
    async waitFor(pattern, stream = "stdout", timeoutMs = 60_000) {
      let match: RegExpMatchArray | null = null;
      await eventually(
        () => {
          match = (stream === "stdout" ? out : err).match(pattern);
          expect(match, `rms ${args.join(" ")}: no ${pattern} yet\nstdout:\n${out.slice(-2000)}\nstderr:\n${err.slice(-2000)}`).not.toBeNull();
        },
        { timeoutMs, intervalMs: 100 },
      );
      return match!;
    },
    async kill(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
