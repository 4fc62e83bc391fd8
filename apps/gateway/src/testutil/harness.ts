import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AdminService, KEY_KIND, RpcError, bearerMetadata, createClient, type KeyKindName } from "@rms/proto";
import { startCore, startWorker, type CoreOptions, type RunningCore } from "@rms/core";
import { testDatabaseName } from "@rms/test-db";
import { dropDatabase } from "@rms/test-db/testkit";
import { MongoClient, type Db } from "mongodb";
import { pino, type Logger } from "pino";
import { afterAll, beforeAll, inject } from "vitest";
// Brings in the ProvidedContext declaration of `mongoUri`.
import type {} from "@rms/test-db/vitest-setup";
import { startGateway, type RunningGateway } from "../server.js";
import type { GatewayConfig } from "../config.js";
import type { RateLimiter } from "../ratelimit/index.js";
import { connectCore, type CoreClients } from "../core.js";
import { apiClient } from "./client.js";

export const ADMIN_TOKEN = "gateway-test-admin-token-0123456789";
/** The gateway's own credential: core allows it resource calls, VerifyKey and RevokeKey only. */
export const GATEWAY_TOKEN = "gateway-test-gateway-token-0123456789";

/** Test configuration: free ports, loopback only, a throwaway data dir; `startStack` sets core and the database. */
function testConfig(dataDir: string, overrides: Partial<GatewayConfig> = {}): GatewayConfig {
  return {
    port: 0,
    httpPort: 0,
    host: "127.0.0.1",
    coreAddr: "127.0.0.1:1",
    tls: null,
    trustedProxies: [],
    proxyProtocolPeers: [],
    coreToken: "test-gateway-token",
    coreTls: null,
    logLevel: "silent",
    dataDir,
    shutdownGraceMs: 2_000,
    mongoUri: "mongodb://127.0.0.1:1",
    mongoDatabase: "rms_unset",
    // High enough that no ordinary test is limited; rate-limit tests set their own.
    rateLimits: { live: 10_000, test: 10_000 },
    addressRateLimit: 10_000,
    rateLimitStore: "memory",
    maxConnectionsPerAddress: 256,
    metricsPort: 0,
    ...overrides,
  };
}

export type { KeyKindName };
export type Mode = "live" | "test";

/** What `startStack` can start differently from the test defaults. */
export interface StackOptions {
  trustedProxies?: string[];
  logs?: { gateway?: Logger; core?: Logger };
  /** Gateway settings over the test defaults (e.g. rate limits, or another MONGODB_URI). */
  gateway?: Partial<GatewayConfig>;
  /** Wraps the gateway's clients of the real core, e.g. to hold calls in flight. */
  wrapCore?: (core: CoreClients) => CoreClients;
  /** Core's database connection string, when it must differ from the gateway's (e.g. through a relay that can be cut). */
  coreMongoUri?: string;
  /** The gateway's rate limiter, e.g. one on a test clock so a test can pass a window without waiting for it. */
  rateLimiter?: RateLimiter;
  /** Core's settings (webhook sealing key, private addresses allowed). */
  coreSettings?: CoreOptions["settings"];
  /** Most pending plain-HTTP revocations the gateway keeps in memory (a smaller cap than the real one keeps a flood short). */
  maxPendingRevocations?: number;
  /** A worker beside core (every task: webhook deliveries, resends included, and jobs), as a real stack runs one. */
  worker?: boolean;
}

/**
 * The whole stack for one test file: its own database, a real core on a free
 * port, the real gateway (HTTPS + plain-HTTP listeners) on free ports, and
 * clients: `api` over HTTPS trusting the gateway's development certificate,
 * `plain` over HTTP, `admin` straight to core's AdminService.
 */
export async function startStack(options: StackOptions = {}) {
  const dataDir = await mkdtemp(join(tmpdir(), "rms-gateway-e2e-"));
  const mongoUri = inject("mongoUri");
  const databaseName = testDatabaseName("gateway");
  const coreOptions = {
    mongoUri: options.coreMongoUri ?? mongoUri,
    databaseName,
    adminToken: ADMIN_TOKEN,
    gatewayToken: GATEWAY_TOKEN,
    healthIntervalMs: 200,
    metricsPort: 0,
    ...(options.logs?.core ? { logger: options.logs.core } : {}),
    ...(options.coreSettings ? { settings: options.coreSettings } : {}),
  };
  let core: RunningCore | undefined = await startCore(coreOptions);
  const coreAddress = core.address;
  const worker = options.worker
    ? await startWorker({ mongoUri, databaseName, logger: pino({ level: "silent" }), ...(options.coreSettings ? { settings: options.coreSettings } : {}) })
    : undefined;
  let gateway: RunningGateway;
  const coreClients = options.wrapCore ? options.wrapCore(connectCore(coreAddress, GATEWAY_TOKEN)) : undefined;
  const gatewayConfig = testConfig(dataDir, {
    coreAddr: coreAddress,
    coreToken: GATEWAY_TOKEN,
    trustedProxies: options.trustedProxies ?? [],
    mongoUri,
    mongoDatabase: databaseName,
    ...options.gateway,
  });
  try {
    gateway = await startGateway(gatewayConfig, {
      logger: options.logs?.gateway ?? pino({ level: "silent" }),
      ...(coreClients ? { core: coreClients } : {}),
      ...(options.rateLimiter ? { rateLimiter: options.rateLimiter } : {}),
      ...(options.maxPendingRevocations !== undefined ? { maxPendingRevocations: options.maxPendingRevocations } : {}),
    });
  } catch (error) {
    coreClients?.close();
    await worker?.stop();
    await core.stop(1_000);
    throw error;
  }
  const admin = createClient(AdminService, coreAddress, { metadata: bearerMetadata(ADMIN_TOKEN), timeoutMs: 5_000 });
  const api = apiClient(`https://127.0.0.1:${gateway.httpsPort}`, { ca: gateway.certificate });
  const plain = apiClient(`http://127.0.0.1:${gateway.httpPort}`);

  /** A new account; `key()` makes keys for it (the secret is returned once, as by core). */
  async function newAccount() {
    const { account } = await admin.createAccount({});
    const id = account!.id;
    async function key(kind: KeyKindName = "secret", mode: Mode = "test", extra: { scopes?: string[]; expiresAt?: number } = {}) {
      const created = await admin.createKey({
        accountId: id,
        kind: KEY_KIND.valueOf(kind),
        livemode: mode === "live",
        scopes: extra.scopes ?? [],
        expiresAt: BigInt(extra.expiresAt ?? 0),
      });
      return { secret: created.secret, id: created.key!.id };
    }
    return { id, key };
  }

  const others: { stop(): Promise<void> }[] = [];
  /** One more gateway of the same settings on the same core and database (as a second replica behind a balancer). */
  async function anotherGateway(extra: { rateLimiter?: RateLimiter } = {}) {
    const other = await startGateway(gatewayConfig, { logger: pino({ level: "silent" }), ...(extra.rateLimiter ? { rateLimiter: extra.rateLimiter } : {}) });
    const client = apiClient(`https://127.0.0.1:${other.httpsPort}`, { ca: other.certificate });
    const handle = {
      api: client,
      gateway: other,
      async stop() {
        await client.close();
        await other.stop();
      },
    };
    others.push(handle);
    return handle;
  }

  return {
    api,
    plain,
    admin,
    gateway,
    anotherGateway,
    coreAddress,
    /** The database of this stack (core's collections and the gateway's). */
    mongoUri,
    databaseName,
    /** Core's metrics port on 127.0.0.1. */
    coreMetricsPort: core.metricsPort!,
    newAccount,
    /** Core's own verdict on a secret (not the gateway's): "valid" or the error code. */
    async coreVerdict(secret: string): Promise<string> {
      try {
        await admin.verifyKey({ secret });
        return "valid";
      } catch (error) {
        return error instanceof RpcError ? error.code : String(error);
      }
    },
    /** Stops core (the gateway keeps running), e.g. to see it degrade. */
    async stopCore() {
      await core?.stop(1_000);
      core = undefined;
    },
    /** Starts core again at the same address (after `stopCore`). */
    async restartCore() {
      core ??= await startCore({ ...coreOptions, address: coreAddress });
    },
    async stop() {
      await Promise.all(others.map((other) => other.stop()));
      admin.close();
      await Promise.all([api.close(), plain.close()]);
      await gateway.stop();
      coreClients?.close();
      await worker?.stop();
      await core?.stop(1_000);
      await dropDatabase(mongoUri, databaseName);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export type Stack = Awaited<ReturnType<typeof startStack>>;
/** An account made by `stack.newAccount()`: its id, and `key()` to make keys for it. */
export type Account = Awaited<ReturnType<Stack["newAccount"]>>;

/** A test account with a test-mode secret key: the usual starting point of a story. */
export async function withSecretKey(stack: Stack, mode: Mode = "test") {
  const account = await stack.newAccount();
  const { secret } = await account.key("secret", mode);
  return { account, key: secret };
}

/** What `useStackWithSecretKey` hands a test file once its stack is up (read it inside tests). */
export interface StackWithSecretKey {
  readonly stack: Stack;
  /** A test-mode secret key of `account`. */
  readonly key: string;
  readonly account: Account;
}

/**
 * For a test file: a stack (with `options`, e.g. a worker beside it) started before its tests and stopped after,
 * with a test-mode secret key and its account. Read `stack` and `key` inside tests (they are set in beforeAll).
 */
export function useStackWithSecretKey(options: StackOptions = {}): StackWithSecretKey {
  const context = {} as { stack: Stack; key: string; account: Account };
  beforeAll(async () => {
    context.stack = await startStack(options);
    Object.assign(context, await withSecretKey(context.stack));
  });
  afterAll(() => context.stack?.stop());
  return context;
}

/** What `useStackWithDatabase` hands a test file once its stack is up (read it inside tests). */
export interface StackWithDatabase extends StackWithSecretKey {
  /** The stack's database, for what a test must read or set that the API does not show (core's documents). */
  readonly db: Db;
}

/**
 * For a test file that also reads or sets core's documents: `useStackWithSecretKey` and a client of the stack's
 * database, opened before the file's tests and closed after (before the stack stops).
 */
export function useStackWithDatabase(options: StackOptions = {}): StackWithDatabase {
  const context = {} as { stack: Stack; key: string; account: Account; db: Db };
  let mongo: MongoClient | undefined;
  beforeAll(async () => {
    context.stack = await startStack(options);
    Object.assign(context, await withSecretKey(context.stack));
    mongo = new MongoClient(context.stack.mongoUri);
    context.db = mongo.db(context.stack.databaseName);
  });
  afterAll(async () => {
    await mongo?.close();
    await context.stack?.stop();
  });
  return context;
}
