import { rmSync, writeFileSync } from "node:fs";
import { RELEASE } from "@rms/config";
import { request } from "node:https";
import { join, resolve } from "node:path";
import { AdminService, DashboardSessionService, KeyKind, bearerMetadata, coreTlsFilesFromEnv, createClient, mutualTlsCredentials } from "@rms/proto";
import { describeDatabase, startDatabase, type RunningDatabase } from "@rms/test-db";
import { ensureAdminToken, ensureClientsFile, ensureGatewayToken, ensureSecretKey } from "../admin-token.js";
import { adminTokenFileOf, clientsFileOf, corePidFileOf, dataDirOf, gatewayTokenFileOf, secretKeyFileOf } from "../paths.js";
import { coreEnv, gatewayEnv, workerEnv } from "./child-env.js";
import { startNodeChild, waitUntil, type Child } from "./children.js";
import { serviceNodeFlags, workerNodeFlags } from "./heap.js";
import { entryPoint } from "./entry-points.js";
import { makePrivate, PRIVATE_UMASK } from "./private-dir.js";
import { parseStackConfig, StackConfigError, type StackConfig } from "./config.js";

const STOP_GRACE_MS = 15_000;
const PARENT_WATCH_MS = 500;
const say = (line: string) => process.stderr.write(`rms: ${line}\n`);

/** GET /v1/status over HTTPS on localhost; true on 200. Readiness only, so the dev certificate is not checked here. */
export function statusOk(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: "127.0.0.1", port, path: "/v1/status", rejectUnauthorized: false, timeout: 1_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", () => resolve(false));
    req.on("timeout", () => req.destroy());
    req.end();
  });
}

/** How long the dashboard link of the first start stays valid (seconds): a day, the longest a session may live. */
export const FIRST_START_DASHBOARD_S = 86_400;

/**
 * First start on an empty database: one account and one test secret key, printed once with a curl line, and (given
 * core's dashboard-session client) a sign-in link of the dashboard beside it.
 */
export async function bootstrapFirstAccount(
  admin: ReturnType<typeof createClient<typeof AdminService>>,
  config: StackConfig,
  dataDir: string,
  sessions?: ReturnType<typeof createClient<typeof DashboardSessionService>>,
): Promise<void> {
  const { accounts } = await admin.listAccounts({ limit: 1 });
  if (accounts.length > 0) return;
  const { account } = await admin.createAccount({});
  const { secret } = await admin.createKey({ accountId: account!.id, kind: KeyKind.SECRET, livemode: false });
  const session = sessions
    ? await sessions.createDashboardSession({
        tenant: { accountId: account!.id, livemode: false },
        readOnly: false,
        expiresIn: BigInt(FIRST_START_DASHBOARD_S),
      })
    : undefined;
  const dashboard = session
    ? [
        "Or open the dashboard (this link signs in for 24 hours; `npx rms dashboard` makes another):",
        "",
        `  https://localhost:${config.PORT}/dashboard/#key=${session.secret}`,
        "",
      ]
    : [];
  // The development certificate as an absolute path: the line works pasted in any directory.
  const tls = config.TLS_CERT_FILE ? "" : ` --cacert ${shellWord(certificatePath(dataDir))}`;
  // The terminal, not stdout: stdout carries the JSON log lines that a collector may read.
  process.stderr.write(
    [
      "",
      `Created account ${account!.id} with a test-mode secret key (shown only this once):`,
      "",
      `  ${secret}`,
      "",
      "Try it:",
      "",
      `  curl${tls} https://localhost:${config.PORT}/v1/resources -H "Authorization: Bearer ${secret}" -d name="My first resource"`,
      "",
      ...dashboard,
    ].join("\n") + "\n",
  );
}

/** Where the development certificate is, absolute (RMS_DATA_DIR may be relative to where npm start ran). */
export function certificatePath(dataDir: string): string {
  return resolve(dataDir, "tls", "cert.pem");
}

/** A path as one shell word: as it is when it has nothing a shell reads, else single-quoted. */
function shellWord(text: string): string {
  return /^[\w./@%+=:,-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The operator's ports, printed with `ready` so no one reads them from the children's log lines: core's gRPC service
 * (`rms`, the admin commands) and every process's `/metrics`, all on loopback. A port set to 0 is a free one the
 * process picked: its log line says which.
 */
export function operatorPorts(config: Pick<StackConfig, "CORE_ADDR" | "METRICS_PORT" | "CORE_METRICS_PORT" | "WORKER_METRICS_PORT" | "WORKERS">): string {
  const port = (n: number) => (n === 0 ? "a free port" : String(n));
  const workers = Array.from(
    { length: config.WORKERS },
    (_, i) => `worker-${i + 1} ${config.WORKER_METRICS_PORT === 0 ? "a free port" : config.WORKER_METRICS_PORT + i}`,
  );
  const metrics = [`gateway ${port(config.METRICS_PORT)}`, `core ${port(config.CORE_METRICS_PORT)}`, ...workers].join(", ");
  return `operator: core gRPC (npx rms) at ${config.CORE_ADDR}; /metrics on 127.0.0.1: ${metrics}`;
}

/**
 * `npm start`: the embedded database (unless MONGODB_URI), core and gateway, in
 * the foreground. SIGTERM or SIGINT stops them all; returns the exit code.
 */
export async function startStack(env: Record<string, string | undefined>): Promise<number> {
  let config: StackConfig;
  try {
    config = parseStackConfig(env);
  } catch (error) {
    if (error instanceof StackConfigError) {
      say(error.message);
      return 2;
    }
    throw error;
  }

  const children: Child[] = [];
  let database: RunningDatabase | undefined;
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      for (const child of [...children].reverse()) await child.stop(STOP_GRACE_MS);
      rmSync(corePidFileOf(env), { force: true });
      await database?.stop();
    })());

  let resolveExit: (code: number) => void = () => {};
  const exitCode = new Promise<number>((resolve) => (resolveExit = resolve));
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      say(`${signal}: stopping`);
      void stopAll().then(() => resolveExit(0));
    });
  }
  // Whoever started us (npm, a shell script) may die without signalling us, even by SIGKILL: we are
  // then re-parented, and stop rather than run on unattended.
  const parent = process.ppid;
  const parentWatch = setInterval(() => {
    if (process.ppid === parent || stopping) return;
    say("parent process gone: stopping");
    void stopAll().then(() => resolveExit(0));
  }, PARENT_WATCH_MS);
  parentWatch.unref();

  const dataDir = dataDirOf(env);
  say(`release ${RELEASE} (RELEASES.md)`);
  try {
    // Everything the stack writes into the data directory (database files, tokens, TLS key) is owner-only.
    process.umask(PRIVATE_UMASK);
    makePrivate(dataDir);
    const adminToken = ensureAdminToken(env, adminTokenFileOf(env));
    // The gateway gets a credential of its own that core allows only the calls the gateway makes.
    const gatewayToken = ensureGatewayToken(env, gatewayTokenFileOf(env));
    const secretKey = ensureSecretKey(env, secretKeyFileOf(env));
    const clientsFile = ensureClientsFile(env, clientsFileOf(env));
    const coreTls = coreTlsFilesFromEnv(env);
    database = config.MONGODB_URI ? undefined : await startDatabase({ dataDir: join(dataDir, "db"), logger: say, env });
    const mongoUri = config.MONGODB_URI ?? database!.uri;
    if (database) say(`database: ${describeDatabase(database)}, data in ${join(dataDir, "db")}`);

    const resolved = { mongoUri, adminToken, gatewayToken, coreTls, dataDir, secretKey, clientsFile };
    const core = startNodeChild("core", entryPoint("core"), coreEnv(env, config, resolved), "inherit", serviceNodeFlags(config.SEMI_SPACE_MB));
    children.push(core);
    // Who to send SIGHUP to for a new caller table (docs/internal-clients.md); removed when the stack stops.
    writeFileSync(corePidFileOf(env), `${core.process.pid}\n`);
    const admin = createClient(AdminService, config.CORE_ADDR, {
      metadata: bearerMetadata(adminToken),
      timeoutMs: 2_000,
      ...(coreTls ? { credentials: mutualTlsCredentials(coreTls) } : {}),
    });
    const sessions = createClient(DashboardSessionService, config.CORE_ADDR, {
      metadata: bearerMetadata(adminToken),
      timeoutMs: 2_000,
      ...(coreTls ? { credentials: mutualTlsCredentials(coreTls) } : {}),
    });
    try {
      await waitUntil("core", () => admin.listAccounts({ limit: 1 }).then(() => true), 60_000, core);
      await bootstrapFirstAccount(admin, config, dataDir, sessions);
    } finally {
      admin.close();
      sessions.close();
    }

    // Workers share only the database with core; they start once core has made the indexes.
    for (let n = 1; n <= config.WORKERS; n++) {
      children.push(
        startNodeChild(`worker-${n}`, entryPoint("worker"), workerEnv(env, config, resolved, n), "inherit", workerNodeFlags(config.WORKER_HEAP_MB)),
      );
    }

    const gateway = startNodeChild("gateway", entryPoint("gateway"), gatewayEnv(env, config, resolved), "inherit", serviceNodeFlags(config.SEMI_SPACE_MB));
    children.push(gateway);
    await waitUntil("gateway", () => statusOk(config.PORT), 60_000, gateway);
    // The operator's ports first: `ready` is the last line, the one scripts and tests wait for.
    say(operatorPorts(config));
    say(
      `ready: https://localhost:${config.PORT}/v1 (plain HTTP ` +
        `${config.HTTP_PORT ? `on ${config.HTTP_PORT}, rejecting: a key sent there is revoked` : "off"}; core at ${config.CORE_ADDR}; ` +
        `${config.WORKERS} worker${config.WORKERS === 1 ? "" : "s"})`,
    );

    // Any child that dies on its own takes the stack down: a half-running stack helps no one.
    void Promise.race(children.map((c) => c.exited.then((code) => ({ c, code })))).then(({ c, code }) => {
      if (stopping) return;
      say(`${c.name} exited (${code}); stopping`);
      void stopAll().then(() => resolveExit(1));
    });
  } catch (error) {
    say(`failed to start: ${error instanceof Error ? error.message : String(error)}`);
    await stopAll();
    return 1;
  }
  return exitCode;
}
