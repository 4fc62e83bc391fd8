import { readFile } from "node:fs/promises";
import { Agent, request } from "node:https";
import { join } from "node:path";
import { AdminService, KeyKind, bearerMetadata, createClient } from "@rms/proto";
import { freePort } from "@rms/test-db";
import { startNodeChild, waitUntil, type Child } from "./children.js";
import { entryPoint } from "./entry-points.js";
import { serviceNodeFlags, workerNodeFlags } from "./heap.js";

export const ADMIN_TOKEN = "process-test-admin-token-0123456789";
export const GATEWAY_TOKEN = "process-test-gateway-token-0123456789";

export { freePort };

export function adminClient(coreAddr: string) {
  return createClient(AdminService, coreAddr, { metadata: bearerMetadata(ADMIN_TOKEN), timeoutMs: 5_000 });
}

/** Core as a real process (so it can be SIGKILLed), ready when it answers an admin call. */
export async function startCoreProcess(options: {
  mongoUri: string;
  databaseName: string;
  port: number;
  faults?: string;
  /** Core's settings (RMS_SECRET_KEY, WEBHOOK_ALLOW_PRIVATE, JOBS_LEASE_MS, ...). */
  env?: Record<string, string>;
  /** `pipe`: its log lines are read from `process.stdout` (with LOG_LEVEL in `env`). */
  stdout?: "inherit" | "pipe";
  /** Node's flags: the launcher's (heap.ts) unless given. */
  nodeFlags?: readonly string[];
}): Promise<Child> {
  const core = startNodeChild(
    "core",
    entryPoint("core"),
    {
      MONGODB_URI: options.mongoUri,
      MONGODB_DATABASE: options.databaseName,
      CORE_ADDR: `127.0.0.1:${options.port}`,
      CORE_METRICS_PORT: "0",
      RMS_ADMIN_TOKEN: ADMIN_TOKEN,
      RMS_GATEWAY_TOKEN: GATEWAY_TOKEN,
      LOG_LEVEL: "fatal",
      ...(options.faults ? { RMS_FAULTS: options.faults } : {}),
      ...options.env,
    },
    options.stdout,
    options.nodeFlags ?? serviceNodeFlags(),
  );
  const admin = adminClient(`127.0.0.1:${options.port}`);
  try {
    await waitUntil("core", () => admin.listAccounts({ limit: 1 }).then(() => true), 60_000, core);
  } finally {
    admin.close();
  }
  return core;
}

/**
 * A worker as a real process (webhook deliveries, jobs), with the heap the launcher gives one (heap.ts; `heapMb`);
 * it answers nothing, so it is running once spawned.
 */
export function startWorkerProcess(options: {
  mongoUri: string;
  databaseName: string;
  name?: string;
  env?: Record<string, string>;
  stdout?: "inherit" | "pipe";
  heapMb?: number;
}): Child {
  return startNodeChild(
    options.name ?? "worker",
    entryPoint("worker"),
    {
      MONGODB_URI: options.mongoUri,
      MONGODB_DATABASE: options.databaseName,
      LOG_LEVEL: "fatal",
      // Several workers on one host: each its own free metrics port.
      WORKER_METRICS_PORT: "0",
      ...options.env,
    },
    options.stdout,
    workerNodeFlags(options.heapMb),
  );
}

/** The gateway as a real process, with its development certificate in `dataDir`. */
export async function startGatewayProcess(options: {
  coreAddr: string;
  mongoUri: string;
  databaseName: string;
  dataDir: string;
  port: number;
  env?: Record<string, string>;
  stdout?: "inherit" | "pipe";
  /** Node's flags: the launcher's (heap.ts) unless given. */
  nodeFlags?: readonly string[];
}): Promise<Child> {
  const gateway = startNodeChild(
    "gateway",
    entryPoint("gateway"),
    {
      CORE_ADDR: options.coreAddr,
      RMS_GATEWAY_TOKEN: GATEWAY_TOKEN,
      MONGODB_URI: options.mongoUri,
      MONGODB_DATABASE: options.databaseName,
      PORT: String(options.port),
      HTTP_PORT: "0",
      METRICS_PORT: String(await freePort()),
      DATA_DIR: options.dataDir,
      LOG_LEVEL: "fatal",
      ...options.env,
    },
    options.stdout,
    options.nodeFlags ?? serviceNodeFlags(),
  );
  await waitUntil("gateway", () => httpsCall(options.dataDir, options.port, "GET", "/v1/status").then(() => true), 60_000, gateway);
  return gateway;
}

export interface HttpsReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTPS request to the gateway, trusting its development certificate. */
export async function httpsCall(
  dataDir: string,
  port: number,
  method: string,
  path: string,
  options: { key?: string; form?: string; headers?: Record<string, string>; agent?: Agent } = {},
): Promise<HttpsReply> {
  const agent = options.agent ?? new Agent({ ca: await readFile(join(dataDir, "tls", "cert.pem")), keepAlive: false });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "localhost",
        port,
        path,
        method,
        agent,
        timeout: 30_000,
        headers: {
          ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
          ...(options.form !== undefined ? { "content-type": "application/x-www-form-urlencoded" } : {}),
          ...options.headers,
        },
      },
      (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        // A body cut short (the server killed, the socket timed out mid-body) fails the call instead of leaving it
        // pending for ever: once the response began, the error is the response's, not the request's.
        res.on("error", reject);
        res.on("close", () => {
          if (!res.complete) reject(new Error(`${method} ${path}: the response was cut short`));
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(options.form);
  });
}

/** A new account with a test secret key, made through core's admin service. */
export async function newTestKey(coreAddr: string): Promise<{ accountId: string; secret: string }> {
  const admin = adminClient(coreAddr);
  try {
    const { account } = await admin.createAccount({});
    const { secret } = await admin.createKey({ accountId: account!.id, kind: KeyKind.SECRET, livemode: false });
    return { accountId: account!.id, secret };
  } finally {
    admin.close();
  }
}
