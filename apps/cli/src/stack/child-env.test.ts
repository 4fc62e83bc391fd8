import { describe, expect, it } from "vitest";
import { coreEnv, gatewayEnv, workerEnv } from "./child-env.js";
import { parseStackConfig } from "./config.js";

const launcherEnv = {
  PATH: "/usr/bin",
  HOME: "/home/op",
  RMS_ADMIN_TOKEN: "operator-admin-token-0123",
  RMS_DB_ENGINE: "pypi-wheel",
  AWS_SECRET_ACCESS_KEY: "not-for-children",
  TRUSTED_PROXIES: "10.0.0.1, 10.0.0.2",
  RATE_LIMIT_STORE: "mongodb",
  MAX_CONNECTIONS_PER_ADDRESS: "64",
  MONGODB_DATABASE: "rms_dev",
  WEBHOOK_ALLOW_PRIVATE: "true",
  WEBHOOK_RETRY_SCHEDULE: "1s,2s",
  WEBHOOK_ENDPOINT_CONCURRENCY: "2",
  FILES_QUOTA_BYTES: "21474836480",
  DASHBOARD_DIR: "/srv/dashboard",
};
const resolved = {
  mongoUri: "mongodb://127.0.0.1:27017",
  adminToken: "admin-token-0123456789",
  gatewayToken: "gateway-token-0123456789",
  coreTls: null,
  dataDir: "/data",
  secretKey: "c2VjcmV0LWtleS1mb3ItdGVzdHMtb25seS0wMTIzNDU=",
};

describe("what the launcher hands its children", () => {
  const config = parseStackConfig(launcherEnv);

  it("gives core its variables and nothing else of the launcher's environment", () => {
    expect(coreEnv(launcherEnv, config, resolved)).toEqual({
      PATH: "/usr/bin",
      HOME: "/home/op",
      CORE_ADDR: "127.0.0.1:50051",
      LOG_LEVEL: "info",
      MONGODB_DATABASE: "rms_dev",
      MONGODB_URI: resolved.mongoUri,
      RMS_GATEWAY_TOKEN: resolved.gatewayToken,
      RMS_DATA_DIR: "/data",
      CORE_METRICS_PORT: "9465",
      WEBHOOK_ALLOW_PRIVATE: "true",
      WEBHOOK_RETRY_SCHEDULE: "1s,2s",
      WEBHOOK_ENDPOINT_CONCURRENCY: "2",
      FILES_QUOTA_BYTES: "21474836480",
      RMS_SECRET_KEY: resolved.secretKey,
      RMS_ADMIN_TOKEN: resolved.adminToken,
    });
  });

  it("gives core the caller table's file, and no other process", () => {
    const withClients = { ...resolved, clientsFile: "/data/clients.json" };
    expect(coreEnv(launcherEnv, config, withClients)).toMatchObject({ CORE_CLIENTS_FILE: "/data/clients.json" });
    expect(gatewayEnv(launcherEnv, config, withClients)).not.toHaveProperty("CORE_CLIENTS_FILE");
    expect(workerEnv(launcherEnv, config, withClients, 1)).not.toHaveProperty("CORE_CLIENTS_FILE");
  });

  it("gives the gateway its variables, never the admin token", () => {
    const env = gatewayEnv(launcherEnv, config, resolved);
    expect(env).toMatchObject({
      TRUSTED_PROXIES: "10.0.0.1,10.0.0.2",
      RATE_LIMIT_STORE: "mongodb",
      MAX_CONNECTIONS_PER_ADDRESS: "64",
      MONGODB_DATABASE: "rms_dev",
      DATA_DIR: "/data",
      PORT: "8443",
      HTTP_PORT: "8080",
      DASHBOARD_DIR: "/srv/dashboard",
    });
    expect(env).not.toHaveProperty("RMS_ADMIN_TOKEN");
    expect(env).not.toHaveProperty("RMS_DB_ENGINE");
    expect(env).not.toHaveProperty("AWS_SECRET_ACCESS_KEY");
    expect(Object.values(env)).not.toContain(resolved.adminToken);
    expect(env).not.toHaveProperty("RMS_SECRET_KEY"); // webhook secrets are core's and the workers' business
  });

  it("gives a worker the database and the settings, and no credential for core", () => {
    expect(workerEnv(launcherEnv, config, resolved, 1)).toEqual({
      PATH: "/usr/bin",
      HOME: "/home/op",
      LOG_LEVEL: "info",
      MONGODB_DATABASE: "rms_dev",
      WORKER_METRICS_PORT: "9466",
      MONGODB_URI: resolved.mongoUri,
      RMS_DATA_DIR: "/data",
      WEBHOOK_ALLOW_PRIVATE: "true",
      WEBHOOK_RETRY_SCHEDULE: "1s,2s",
      WEBHOOK_ENDPOINT_CONCURRENCY: "2",
      FILES_QUOTA_BYTES: "21474836480",
      RMS_SECRET_KEY: resolved.secretKey,
    });
  });

  it("gives every child the OTEL_* variables but OTEL_SERVICE_NAME (each process names itself)", () => {
    const env = {
      ...launcherEnv,
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
      OTEL_TRACES_SAMPLER: "always_on",
      OTEL_SERVICE_NAME: "one-name",
      OTEL_SDK_DISABLED: "",
    };
    const traced = parseStackConfig(env);
    for (const child of [coreEnv(env, traced, resolved), gatewayEnv(env, traced, resolved), workerEnv(env, traced, resolved, 1)]) {
      expect(Object.fromEntries(Object.entries(child).filter(([name]) => name.startsWith("OTEL_")))).toEqual({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
        OTEL_TRACES_SAMPLER: "always_on",
      });
    }
  });

  it("gives each worker its own metrics port: the base plus n - 1, clear of the other ports; 0 lets each pick a free one", () => {
    const portsOf = (env: Record<string, string>, workers: number) => {
      const stack = parseStackConfig({ ...env, WORKERS: String(workers) });
      return Array.from({ length: workers }, (_, i) => workerEnv(env, stack, resolved, i + 1).WORKER_METRICS_PORT);
    };
    const byDefault = portsOf(launcherEnv, 3);
    expect(byDefault).toEqual(["9466", "9467", "9468"]);
    const others = [config.PORT, config.HTTP_PORT, config.METRICS_PORT, config.CORE_METRICS_PORT].map(String);
    expect(new Set([...byDefault, ...others]).size).toBe(byDefault.length + others.length);
    expect(portsOf({ ...launcherEnv, WORKER_METRICS_PORT: "19000" }, 2)).toEqual(["19000", "19001"]);
    expect(portsOf({ ...launcherEnv, WORKER_METRICS_PORT: "0" }, 3)).toEqual(["0", "0", "0"]);
    // Core and the gateway do not get it.
    expect(coreEnv(launcherEnv, config, resolved)).not.toHaveProperty("WORKER_METRICS_PORT");
    expect(gatewayEnv(launcherEnv, config, resolved)).not.toHaveProperty("WORKER_METRICS_PORT");
  });
});
