// The full stack of `npm run bench`: a genuine mongod (unless MONGODB_URI is set) and `rms start` on free ports
// with a throwaway data directory; its first-start test key, the admin gRPC clients (operator credential), and
// the pids of its processes for the meters.
import { spawn } from "node:child_process";
import { mkdirSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "@rms/test-db";
import { childPids, httpsJson } from "./load.mjs";

/**
 * `own` learns each process started (the database, then `rms start`) at once, so a failed start is cleaned up too.
 * A second stack (`name`) runs on the first one's database (`mongoUri`), in a database name of its own (in `env`),
 * with extra variables in `env` (the tracing rows: OTEL_*).
 */
export async function startStack({ root, work, ports, own, say, name = "", mongoUri: sharedUri = null, env: extra = {} }) {
  const { httpsPort, corePort, metricsPort, coreMetricsPort } = ports;
  const dataDir = join(work, `data${name ? `-${name}` : ""}`);
  const { startDatabase } = await import("@rms/test-db");
  const proto = await import("@rms/proto");
  const database =
    process.env.MONGODB_URI || sharedUri ? null : await startDatabase({ dataDir: join(dataDir, "db"), env: { ...process.env, MONGODB_URI: "" } });
  if (database) own.database(database);
  const mongoUri = sharedUri ?? process.env.MONGODB_URI ?? database.uri;
  const databaseName = extra.MONGODB_DATABASE || process.env.MONGODB_DATABASE || "rms";

  say(`starting the ${name ? `${name} ` : ""}stack (data in a temporary directory)`);
  const logFile = join(work, `stack${name ? `-${name}` : ""}.log`);
  const out = openSync(logFile, "a");
  const env = {
    ...process.env,
    RMS_DATA_DIR: dataDir,
    RMS_ADMIN_TOKEN: "",
    PORT: String(httpsPort),
    HTTP_PORT: "0",
    CORE_ADDR: `127.0.0.1:${corePort}`,
    METRICS_PORT: String(metricsPort),
    CORE_METRICS_PORT: String(coreMetricsPort),
    WORKER_METRICS_PORT: "0",
    RATE_LIMIT_TEST: "100000000",
    RATE_LIMIT_LIVE: "100000000",
    RATE_LIMIT_ADDRESS: "100000000",
    MONGODB_URI: mongoUri,
    MONGODB_DATABASE: databaseName,
    // Webhook endpoints at the bench's receiver on loopback (RMS_SECRET_KEY: `rms start` makes one in the data directory).
    WEBHOOK_ALLOW_PRIVATE: "true",
    ...extra,
  };
  // BENCH_PROFILE=1: CPU profiles of the stack's processes (written when they stop) into bench/results/profiles/.
  if (process.env.BENCH_PROFILE === "1") {
    const profileDir = join(root, "bench", "results", "profiles");
    mkdirSync(profileDir, { recursive: true });
    env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? ""} --cpu-prof --cpu-prof-dir=${profileDir}`.trim();
  }
  const stack = spawn(process.execPath, [join(root, "apps/cli/dist/rms.js"), "start"], { env, stdio: ["ignore", out, out] });
  own.child(stack);
  const log = () => readFileSync(logFile, "utf8");
  await until(
    () => log().includes("rms: ready"),
    180_000,
    () => stack.exitCode !== null && log(),
  );
  const key = log().match(/sk_test_[0-9A-Za-z]+/)?.[0];
  if (!key) throw new Error("no test key in the first-start output");
  const adminToken = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
  const auth = { metadata: { authorization: `Bearer ${adminToken}` }, timeoutMs: 30_000 };
  return {
    database,
    mongoUri,
    databaseName,
    /** The `rms start` process: SIGTERM stops the whole stack. */
    process: stack,
    dataDir,
    certFile: join(dataDir, "tls", "cert.pem"),
    keyFile: join(dataDir, "tls", "key.pem"),
    /** The first start's test secret key (of the account `rms start` made). */
    key,
    admin: proto.createClient(proto.AdminService, `127.0.0.1:${corePort}`, auth),
    coreResources: proto.createClient(proto.ResourceService, `127.0.0.1:${corePort}`, auth),
    /** The stack's processes by name (core, worker, gateway, database), for the meters. */
    pids() {
      const found = {};
      for (const pid of childPids(stack.pid)) {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
        if (cmd.includes("apps/core/dist/worker/main.js")) found.worker = pid;
        else if (cmd.includes("apps/core/dist/main.js")) found.core = pid;
        else if (cmd.includes("apps/gateway/dist/main.js")) found.gateway = pid;
        else found.database = pid;
      }
      if (database?.pid) found.database = database.pid;
      return found;
    },
  };
}

async function until(probe, timeoutMs, failed) {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    const why = failed?.();
    if (why) throw new Error(`the stack exited:\n${why}`);
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Stops a process the bench started: SIGTERM (`rms start` stops its whole stack on it), SIGKILL after 15 s. */
export async function stopProcess(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  await new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve();
    }, 15_000);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** `count` distinct free ports (test-db's picker: below the ephemeral range, never the same one twice). */
export async function freePorts(count) {
  const ports = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  return ports;
}

/** Makes the resource a stack's GET rows read (the same on every stack the bench starts); answers it. */
export function benchResource(apiUrl, ca, headers) {
  return httpsJson(
    "POST",
    `${apiUrl}/v1/resources`,
    ca,
    { ...headers, "content-type": "application/json" },
    JSON.stringify({ name: "bench", metadata: { plan: "pro" } }),
  );
}
