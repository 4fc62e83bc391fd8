import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KeyKind } from "@rms/proto";
import { pino } from "pino";
import type { GatewayConfig } from "../config.js";
import { startGateway } from "../server.js";
import { apiClient } from "./client.js";
import { fakeCore } from "./fake-core.js";
import { MemoryIdempotencyStore } from "../idempotency/index.js";

/** Test configuration: free ports, loopback only, a throwaway data dir. */
export function testConfig(dataDir: string, overrides: Partial<GatewayConfig> = {}): GatewayConfig {
  return {
    port: 0,
    httpPort: 0,
    host: "127.0.0.1",
    coreAddr: "127.0.0.1:1",
    tls: null,
    trustedProxies: [],
    adminToken: "test-admin-token",
    logLevel: "silent",
    dataDir,
    shutdownGraceMs: 2_000,
    // Never contacted by the unit gateway (in-memory stores); end-to-end tests pass the test database.
    mongoUri: "mongodb://127.0.0.1:1",
    mongoDatabase: "rms_unit",
    // High enough that no ordinary test is limited; rate-limit tests set their own.
    rateLimits: { live: 10_000, test: 10_000 },
    rateLimitStore: "memory",
    metricsPort: 0,
    ...overrides,
  };
}

/**
 * The real gateway (HTTPS and plain-HTTP listeners) over an in-memory fake
 * core, with keys of every kind registered, and clients for both listeners.
 */
export async function startUnitGateway(overrides: Partial<GatewayConfig> = {}) {
  const dataDir = await mkdtemp(join(tmpdir(), "rms-gateway-"));
  const core = fakeCore();
  const keys = {
    secret: "sk_test_secret",
    publishable: "pk_test_publishable",
    readOnly: "rk_test_readonly",
    writeOnly: "rk_test_writeonly",
  };
  core.addKey(keys.secret, { kind: KeyKind.SECRET, id: "key_secret" });
  core.addKey(keys.publishable, { kind: KeyKind.PUBLISHABLE, id: "key_publishable" });
  core.addKey(keys.readOnly, { kind: KeyKind.RESTRICTED, scopes: ["resources:read"], id: "key_readonly" });
  core.addKey(keys.writeOnly, { kind: KeyKind.RESTRICTED, scopes: ["resources:write"], id: "key_writeonly" });
  const logger = pino({ level: "silent" });
  const gateway = await startGateway(testConfig(dataDir, overrides), { core, logger, idempotency: new MemoryIdempotencyStore() });
  const api = apiClient(`https://127.0.0.1:${gateway.httpsPort}`, { ca: gateway.certificate });
  const plain = apiClient(`http://127.0.0.1:${gateway.httpPort}`);
  return {
    gateway,
    core,
    keys,
    api,
    plain,
    dataDir,
    async stop() {
      await Promise.all([api.close(), plain.close()]);
      await gateway.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export type UnitGateway = Awaited<ReturnType<typeof startUnitGateway>>;
