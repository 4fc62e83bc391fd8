import { describe, expect, it } from "vitest";
import { ConfigError, DEFAULT_DASHBOARD_DIR, parseGatewayConfig } from "./config.js";

const base = { RMS_GATEWAY_TOKEN: "gateway-token-0123456789", MONGODB_URI: "mongodb://127.0.0.1:27017" };

describe("parseGatewayConfig", () => {
  it("applies the documented defaults", () => {
    expect(parseGatewayConfig(base)).toEqual({
      port: 8443,
      httpPort: 8080,
      host: undefined,
      coreAddr: "127.0.0.1:50051",
      tls: null,
      trustedProxies: [],
      proxyProtocolPeers: [],
      coreToken: "gateway-token-0123456789",
      coreTls: null,
      logLevel: "info",
      dataDir: ".data",
      shutdownGraceMs: 10_000,
      metricsPort: 9464,
      mongoUri: "mongodb://127.0.0.1:27017",
      mongoDatabase: "rms",
      rateLimits: { live: 100, test: 25 },
      addressRateLimit: 500,
      rateLimitStore: "memory",
      maxConnectionsPerAddress: 256,
      requestLogs: { enabled: true, buffer: 10_000, retentionDays: 14 },
      supervised: false,
      tracing: expect.objectContaining({ exporter: null, serviceName: "rms-gateway" }),
      filesMaxBytes: 512 * 1024 * 1024,
      dashboardDir: DEFAULT_DASHBOARD_DIR,
    });
    expect(parseGatewayConfig({ ...base, FILES_MAX_BYTES: "1048576" }).filesMaxBytes).toBe(1_048_576);
    expect(DEFAULT_DASHBOARD_DIR.replaceAll("\\", "/")).toMatch(/apps\/dashboard\/dist$/);
  });

  it("reads every variable", () => {
    const config = parseGatewayConfig({
      ...base,
      PORT: "9443",
      HTTP_PORT: "0",
      CORE_ADDR: "core.internal:6000",
      TLS_CERT_FILE: "/etc/cert.pem",
      TLS_KEY_FILE: "/etc/key.pem",
      TRUSTED_PROXIES: "10.0.0.1, ::1",
      LOG_LEVEL: "debug",
      DATA_DIR: "/var/lib/rms",
      CORE_TLS_CERT_FILE: "/etc/gateway.pem",
      CORE_TLS_KEY_FILE: "/etc/gateway-key.pem",
      CORE_TLS_CA_FILE: "/etc/ca.pem",
      MAX_CONNECTIONS_PER_ADDRESS: "64",
      REQUEST_LOGS: "off",
      REQUEST_LOGS_BUFFER: "500",
      REQUEST_LOGS_RETENTION_DAYS: "3",
    });
    expect(config).toMatchObject({
      maxConnectionsPerAddress: 64,
      requestLogs: { enabled: false, buffer: 500, retentionDays: 3 },
      coreTls: { certFile: "/etc/gateway.pem", keyFile: "/etc/gateway-key.pem", caFile: "/etc/ca.pem" },
      port: 9443,
      httpPort: null,
      coreAddr: "core.internal:6000",
      tls: { certFile: "/etc/cert.pem", keyFile: "/etc/key.pem" },
      trustedProxies: ["10.0.0.1", "::1"],
      logLevel: "debug",
      dataDir: "/var/lib/rms",
    });
  });

  it.each([
    [{ PORT: "http" }, "PORT"],
    [{ PORT: "70000" }, "PORT"],
    [{ HTTP_PORT: "-1" }, "HTTP_PORT"],
    [{ CORE_ADDR: "nope" }, "CORE_ADDR"],
    [{ TRUSTED_PROXIES: "10.0.0.1,proxy.example" }, "TRUSTED_PROXIES"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL"],
    [{ TLS_CERT_FILE: "/etc/cert.pem" }, "TLS_KEY_FILE"],
    [{ TLS_KEY_FILE: "/etc/key.pem" }, "TLS_CERT_FILE"],
    [{ RATE_LIMIT_LIVE: "fast" }, "RATE_LIMIT_LIVE"],
    [{ RATE_LIMIT_STORE: "redis" }, "RATE_LIMIT_STORE"],
    [{ MAX_CONNECTIONS_PER_ADDRESS: "0" }, "MAX_CONNECTIONS_PER_ADDRESS"],
    [{ MAX_CONNECTIONS_PER_ADDRESS: "many" }, "MAX_CONNECTIONS_PER_ADDRESS"],
    [{ MONGODB_URI: "localhost:27017" }, "MONGODB_URI"],
    [{ MONGODB_DATABASE: "a.b" }, "MONGODB_DATABASE"],
    [{ REQUEST_LOGS: "maybe" }, "REQUEST_LOGS"],
    [{ REQUEST_LOGS_BUFFER: "0" }, "REQUEST_LOGS_BUFFER"],
    [{ REQUEST_LOGS_RETENTION_DAYS: "two" }, "REQUEST_LOGS_RETENTION_DAYS"],
  ])("refuses %o with one line naming %s", (env, variable) => {
    let caught: unknown;
    try {
      parseGatewayConfig({ ...base, ...env });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const message = (caught as Error).message;
    expect(message.startsWith(variable)).toBe(true);
    expect(message).not.toContain("\n");
  });

  it("requires RMS_GATEWAY_TOKEN", () => {
    expect(() => parseGatewayConfig({})).toThrow(/^RMS_GATEWAY_TOKEN is required$/);
    expect(() => parseGatewayConfig({ RMS_GATEWAY_TOKEN: "" })).toThrow(/^RMS_GATEWAY_TOKEN is required$/);
    // The same token rule as core's and the launcher's (@rms/config).
    expect(() => parseGatewayConfig({ ...base, RMS_GATEWAY_TOKEN: "short" })).toThrow(/^RMS_GATEWAY_TOKEN must be at least 16 characters$/);
  });

  it("ignores the admin token: the gateway has a credential of its own", () => {
    expect(() => parseGatewayConfig({ RMS_ADMIN_TOKEN: "admin-token", MONGODB_URI: base.MONGODB_URI })).toThrow(/^RMS_GATEWAY_TOKEN is required$/);
  });

  it("wants all three CORE_TLS_ files or none", () => {
    expect(() => parseGatewayConfig({ ...base, CORE_TLS_CERT_FILE: "/etc/gateway.pem" })).toThrow(
      /^CORE_TLS_KEY_FILE must be set together with the other CORE_TLS_ files$/,
    );
  });

  it("requires MONGODB_URI (idempotency records live in the database)", () => {
    expect(() => parseGatewayConfig({ RMS_GATEWAY_TOKEN: base.RMS_GATEWAY_TOKEN })).toThrow(/^MONGODB_URI is required$/);
  });
});
