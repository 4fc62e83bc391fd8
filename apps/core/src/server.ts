import { hostname } from "node:os";
import { Server, ServerCredentials } from "@grpc/grpc-js";
import { ReflectionService } from "@grpc/reflection";
import { RELEASE } from "@rms/config";
import {
  addService,
  HOP_SERVER_OPTIONS,
  RpcError,
  file_rms_v1_errors,
  file_grpc_health_v1_health,
  reflectionPackageDefinition,
  type ServeOptions,
} from "@rms/proto";
import { HealthImplementation } from "grpc-health-check";
import type { MongoClient } from "mongodb";
import { pino, type Logger } from "pino";
import { mapStoreError } from "./errors.js";
import { NO_FAULTS, type Faults } from "./faults.js";
import { builtInClients } from "./clients/built-in.js";
import type { CredentialedClient } from "./clients/client.js";
import { readClientsFile } from "./clients/file.js";
import { callerGuard } from "./clients/guard.js";
import { CallerTable } from "./clients/table.js";
import { TenantRefusal } from "./clients/tenant-scope.js";
import { isLoopbackAddress } from "./config.js";
import { requestId } from "./grpc/call-info.js";
import { startMetricsServer } from "@rms/metrics-server";
import { CoreMetrics } from "./metrics.js";
import { watchDatabaseHealth } from "./database-health.js";
import { DOMAINS, HEALTH_NAMES, METHOD_CALLERS, OUTBOXES, SERVED_METHODS, domainContext } from "./domains.js";
import { eventRelay } from "./event-relay.js";
import { openClient } from "./storage/client-options.js";
import { ensureOutboxIndex } from "./storage/relay.js";
import { IdempotencyRecords } from "./storage/idempotency-records.js";
import { migrate, type MigrationStep } from "./migrations/index.js";
import { throughOutage } from "./storage/through-outage.js";
import type { Domain, OpenDomain } from "./domain.js";
import { DEFAULT_SETTINGS, type CoreSettings } from "./settings.js";

export interface CoreOptions {
  mongoUri: string;
  databaseName: string;
  /** host:port; port 0 picks a free one. */
  address?: string;
  /** The operator's token (RMS_ADMIN_TOKEN): the built-in `operator` entry of the caller table (clients/). */
  adminToken: string;
  /** The gateway's own token: the built-in `gateway` entry, which acts only for a presented API key. */
  gatewayToken?: string;
  /**
   * More entries of the caller table (CORE_CLIENTS_FILE, read by config.ts at start): `entries` from the start, and
   * the `file` `reloadClients` reads again.
   */
  clients?: { readonly file?: string; readonly entries: readonly CredentialedClient[] };
  /**
   * Who server reflection answers: anyone (`open`), or known clients of the caller table only. Default: open on a
   * loopback address, known clients elsewhere.
   */
  reflection?: "open" | "known clients";
  /** PEM material: serve gRPC over TLS and require client certificates signed by `ca`. Required off loopback. */
  tls?: { cert: Buffer; key: Buffer; ca: Buffer };
  logger?: Logger;
  /** Test-only crash points (RMS_FAULTS); none by default. */
  faults?: Faults;
  /** How often the database is pinged for the health status. */
  healthIntervalMs?: number;
  /** Port of `GET /metrics` on 127.0.0.1 (0 picks a free one); no metrics server when omitted. */
  metricsPort?: number;
  /**
   * The event relay (storage/relay.ts): on by default, told of every write and sweeping every
   * `sweepIntervalMs` (default 5 s, `SWEEP_INTERVAL_MS`) for what a crash left; `false` leaves events in their outbox
   * (tests that look at the outbox itself).
   */
  relay?: { sweepIntervalMs?: number } | false;
  /** Behaviour settings (settings.ts); defaults for what is not given. */
  settings?: Partial<CoreSettings>;
  /** The migration steps to bring the database to before serving (every step by default) and their lease's length. */
  migrations?: { steps?: readonly MigrationStep[]; leaseMs?: number };
}

export interface RunningCore {
  /** host:port actually bound. */
  readonly address: string;
  readonly mongo: MongoClient;
  /** Prometheus metrics (served on `metricsPort` when given). */
  readonly metrics: CoreMetrics;
  /** The bound metrics port, or null when not served. */
  readonly metricsPort: number | null;
  /**
   * Reads the clients file again (on SIGHUP): its entries replace the table's from the next call on, or, when the file
   * is refused, the table stays as it was and the log says why. Answers whether the file was taken.
   */
  reloadClients(): boolean;
  /** Stops accepting calls, lets in-flight ones finish (bounded), closes the database. */
  stop(graceMs?: number): Promise<void>;
}

/** Codes of a call refused for who made it (clients/guard.ts), as its log line names them. */
const CALLER_REFUSALS = new Set(["admin_token_invalid", "method_not_allowed"]);

/** Starts the core gRPC server over MongoDB: the services of every domain (domains.ts), health and reflection. */
export async function startCore(options: CoreOptions): Promise<RunningCore> {
  if (!options.tls && !isLoopbackAddress(options.address ?? "127.0.0.1:0")) {
    throw new Error(`refusing plaintext gRPC on non-loopback ${options.address}: give TLS material`);
  }
  const logger = options.logger ?? pino({ level: "silent" });
  const address = options.address ?? "127.0.0.1:0";
  const callers = new CallerTable(
    builtInClients({ operator: options.adminToken, gateway: options.gatewayToken }, METHOD_CALLERS),
    options.clients?.entries ?? [],
  );
  // Reflection describes every service to whoever asks: open while core listens on loopback only.
  const guard = callerGuard(callers, { reflectionOpen: (options.reflection ?? (isLoopbackAddress(address) ? "open" : "known clients")) === "open" });
  const metrics = new CoreMetrics((metadata, call) => guard.identify(metadata, call).label);
  const mongo = openClient(options.mongoUri, options.faults?.weakWrites === true);
  metrics.watch(mongo);
  const db = mongo.db(options.databaseName);
  const relay = options.relay === false ? null : eventRelay(db, logger, metrics.registry);
  const settings: CoreSettings = { ...DEFAULT_SETTINGS, ...options.settings };
  // A relay for the writes that must relay their document at once, even when the background relay is off (tests).
  const relayOne = relay ?? eventRelay(db, logger);
  const context = {
    ...domainContext(db, logger, options.faults ?? NO_FAULTS, relay ? (collection, id) => relay.notify(collection, id) : undefined, settings),
    relayNow: async (collection: string, id: string) => void (await relayOne.relayDocument(collection, id)),
  };
  const opened = DOMAINS.map((domain) => ({ domain, open: domain.open(context) }));
  // Connected first, again and again while the database does not answer: the driver closes the topology of a client whose
  // first operation fails, and every later operation then fails at once, so a start that met an outage would wait for nothing.
  await throughOutage(() => mongo.connect(), { logger, what: "core connection" });
  // The data first (docs/migrations.md): this core runs the steps not done yet under the migration lease, or waits
  // while another process runs them; it listens only after, so nothing reads data of a shape this release left behind.
  // A start that meets an election waits for the new primary instead of exiting.
  await throughOutage(
    () =>
      migrate(db, {
        owner: `core ${hostname()}:${process.pid}`,
        release: RELEASE,
        logger,
        ...(options.migrations?.steps ? { steps: options.migrations.steps } : {}),
        ...(options.migrations?.leaseMs ? { leaseMs: options.migrations.leaseMs } : {}),
      }),
    { logger, what: "migrations" },
  );
  // Declared after the migrations (a step may drop an index whose options change) and before serving.
  await throughOutage(
    async () => {
      for (const { open } of opened) await open.ensureIndexes();
      for (const name of OUTBOXES) await ensureOutboxIndex(db.collection(name));
      await new IdempotencyRecords(db).ensureIndexes();
    },
    { logger, what: "core indexes" },
  );

  // HOP_SERVER_OPTIONS: no channelz bookkeeping per call (docs/performance.md, "The gRPC hop").
  // The guard after the metrics: a reflection call it refuses is still counted (grpc-js runs the first one innermost).
  const server = new Server({
    ...HOP_SERVER_OPTIONS,
    "grpc.max_receive_message_length": 4 * 1024 * 1024,
    interceptors: [metrics.interceptor, guard.interceptor],
  });
  const serveOptions: ServeOptions = {
    authorize: guard.authorize,
    spanAttributes: (context) => ({ "rms.client": guard.identityOf(context.metadata).label }),
    mapError: mapStoreError,
    onCallEnd(context, code, durationMs, error) {
      // One line per call with the gateway's request id and the calling client, so a request can be followed across
      // both processes and a client's calls found by its name; a refusal of the client says so (`refused`).
      const client = guard.identityOf(context.metadata).label;
      const fields = { method: context.method, client, request_id: requestId(context) };
      if (error && code === 13) return logger.error({ err: error, ...fields }, "call failed");
      const refused = error instanceof TenantRefusal ? "tenant_not_allowed" : error instanceof RpcError && CALLER_REFUSALS.has(error.code) ? error.code : null;
      const line = { ...fields, code, duration_ms: Math.round(durationMs * 10) / 10, ...(error instanceof RpcError ? { error_code: error.code } : {}) };
      if (refused) logger.warn({ ...line, refused }, "call refused");
      else logger.info(line, "call");
    },
  };
  for (const { domain, open } of opened) {
    for (const bound of implementationsOf(domain, open)) addService(server, bound.service, bound.implementation, serveOptions);
  }

  const health = new HealthImplementation(Object.fromEntries(HEALTH_NAMES.map((n) => [n, "SERVING" as const])));
  health.addToServer(server);
  // Reflection describes our services (and the error detail they send) and the standard health service, so grpcurl-style tools see all.
  const files = [...DOMAINS.flatMap((d) => d.files), file_rms_v1_errors, file_grpc_health_v1_health];
  new ReflectionService(reflectionPackageDefinition(files)).addToServer(server);

  // Health follows the database: NOT_SERVING while it does not answer a ping, `rms.database` NOT_SERVING while slow too.
  const stopHealth = watchDatabaseHealth(db, health, HEALTH_NAMES, options.healthIntervalMs ?? 2_000, logger);
  if (relay && options.relay !== false) relay.start(options.relay?.sweepIntervalMs);
  const stopBackground = opened.flatMap(({ open }) => (open.start ? [open.start()] : []));

  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(address, serverCredentials(options.tls), (err, bound) => (err ? reject(err) : resolve(bound))),
  );
  const listening = `${address.replace(/:\d+$/, "")}:${port}`;
  let metricsServer: Awaited<ReturnType<typeof startMetricsServer>> | undefined;
  try {
    if (options.metricsPort !== undefined) metricsServer = await startMetricsServer(metrics.registry, options.metricsPort);
  } catch (error) {
    stopHealth();
    await relay?.stop();
    for (const stop of stopBackground) await stop();
    server.forceShutdown();
    await mongo.close();
    throw error;
  }
  logger.info(
    { address: listening, metrics_port: metricsServer?.port ?? null, release: RELEASE, clients: callers.clients.map((c) => c.name) },
    "core listening",
  );

  return {
    address: listening,
    mongo,
    metrics,
    metricsPort: metricsServer?.port ?? null,
    reloadClients() {
      const file = options.clients?.file;
      if (!file) {
        logger.info({ clients: callers.clients.map((c) => c.name), table: "kept: no CORE_CLIENTS_FILE to read" }, "clients file not set");
        return false;
      }
      try {
        callers.replace(readClientsFile(file, SERVED_METHODS));
      } catch (error) {
        logger.error({ file, reason: (error as Error).message, clients: callers.clients.map((c) => c.name), table: "kept as it was" }, "clients file refused");
        return false;
      }
      logger.info({ file, clients: callers.clients.map((c) => c.name) }, "clients file read");
      return true;
    },
    async stop(graceMs = 10_000) {
      stopHealth();
      await metricsServer?.close();
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      await relay?.stop();
      for (const stop of stopBackground) await stop();
      await mongo.close();
    },
  };
}

/** Mutual TLS when given material (clients must present a certificate signed by its CA), else plaintext. */
function serverCredentials(tls: CoreOptions["tls"]): ServerCredentials {
  if (!tls) return ServerCredentials.createInsecure();
  return ServerCredentials.createSsl(tls.ca, [{ cert_chain: tls.cert, private_key: tls.key }], true);
}

/** The domain's handlers, one per service it declares (and no other), in its declared order. */
function implementationsOf(domain: Domain, open: OpenDomain): OpenDomain["implementations"] {
  const declared = domain.services.map((entry) => entry.service.typeName);
  const bound = open.implementations.map((b) => b.service.typeName);
  if (declared.length !== bound.length || declared.some((name) => !bound.includes(name))) {
    throw new Error(`domain ${domain.name} declares ${declared.join(", ")} but implements ${bound.join(", ")}`);
  }
  return open.implementations;
}
