import { describe, expect, it } from "vitest";
import { parseStackConfig } from "./config.js";
import { DEFAULT_SEMI_SPACE_MB, DEFAULT_WORKER_HEAP_MB, WORKER_SEMI_SPACE_MB, serviceNodeFlags, workerNodeFlags } from "./heap.js";

describe("stack configuration", () => {
  it("defaults every variable of the contract", () => {
    expect(parseStackConfig({})).toMatchObject({
      PORT: 8443,
      HTTP_PORT: 8080,
      CORE_ADDR: "127.0.0.1:50051",
      METRICS_PORT: 9464,
      CORE_METRICS_PORT: 9465,
      WORKER_METRICS_PORT: 9466,
      LOG_LEVEL: "info",
      WORKERS: 1,
      WORKER_HEAP_MB: DEFAULT_WORKER_HEAP_MB,
      SEMI_SPACE_MB: DEFAULT_SEMI_SPACE_MB,
    });
  });

  it("gives gateway and core the semi-spaces SEMI_SPACE_MB names, or V8's own sizing for 0", () => {
    expect(serviceNodeFlags(parseStackConfig({}).SEMI_SPACE_MB)).toEqual([`--max-semi-space-size=${DEFAULT_SEMI_SPACE_MB}`]);
    expect(serviceNodeFlags(parseStackConfig({ SEMI_SPACE_MB: "8" }).SEMI_SPACE_MB)).toEqual(["--max-semi-space-size=8"]);
    expect(serviceNodeFlags(parseStackConfig({ SEMI_SPACE_MB: "0" }).SEMI_SPACE_MB)).toEqual([]);
    expect(() => parseStackConfig({ SEMI_SPACE_MB: "1024" })).toThrow("SEMI_SPACE_MB must be a whole number of MiB from 0 to 256");
  });

  it("gives workers the heap WORKER_HEAP_MB names, or V8's own sizing for 0", () => {
    expect(workerNodeFlags(parseStackConfig({ WORKER_HEAP_MB: "256" }).WORKER_HEAP_MB)).toEqual([
      "--max-old-space-size=256",
      `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`,
    ]);
    expect(workerNodeFlags(parseStackConfig({ WORKER_HEAP_MB: "0" }).WORKER_HEAP_MB)).toEqual([]);
    expect(() => parseStackConfig({ WORKER_HEAP_MB: "32" })).toThrow("WORKER_HEAP_MB must be 0 (no cap) or a whole number of MiB from 64 to 65536");
  });

  it("treats empty values as unset", () => {
    expect(parseStackConfig({ MONGODB_URI: "", PORT: "" })).toMatchObject({ PORT: 8443 });
  });

  it.each([
    [{ PORT: "https" }, "PORT must be a port number"],
    [{ HTTP_PORT: "70000" }, "HTTP_PORT must be a port number"],
    [{ MONGODB_URI: "postgres://x" }, "MONGODB_URI must be a mongodb:// or mongodb+srv:// URI"],
    [{ CORE_ADDR: "nope" }, "CORE_ADDR must be host:port"],
    [{ TLS_CERT_FILE: "cert.pem" }, "TLS_KEY_FILE must be set together with the other TLS file"],
    [{ RATE_LIMIT_LIVE: "-5" }, "RATE_LIMIT_LIVE must be a positive integer"],
    [{ RATE_LIMIT_STORE: "redis" }, "RATE_LIMIT_STORE must be memory or mongodb"],
    [{ MAX_CONNECTIONS_PER_ADDRESS: "0" }, "MAX_CONNECTIONS_PER_ADDRESS must be a positive integer"],
    // The children's OTEL_* variables are checked before anything starts (docs/observability.md, "Tracing").
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json"],
    [{ OTEL_TRACES_SAMPLER: "sometimes" }, "OTEL_TRACES_SAMPLER must be one of"],
    [{ TRUSTED_PROXIES: "10.0.0.1, example.com" }, "TRUSTED_PROXIES must be a comma-separated list of IP addresses"],
    [{ MONGODB_DATABASE: "a.b" }, "MONGODB_DATABASE must be a MongoDB database name"],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent"],
    [{ RMS_ADMIN_TOKEN: "short" }, "RMS_ADMIN_TOKEN must be at least 16 characters"],
    [{ RMS_GATEWAY_TOKEN: "short" }, "RMS_GATEWAY_TOKEN must be at least 16 characters"],
    [{ WORKERS: "many" }, "WORKERS must be a whole number from 0 to 64"],
    [{ WORKERS: "65" }, "WORKERS must be a whole number from 0 to 64"],
    [{ RMS_SECRET_KEY: "hunter2" }, "RMS_SECRET_KEY A secret key must be 64 hex digits or the base64 of 32 bytes."],
    [{ WEBHOOK_ALLOW_PRIVATE: "yes" }, "WEBHOOK_ALLOW_PRIVATE must be true or false"],
    [{ WEBHOOK_RETRY_SCHEDULE: "5s,soon" }, 'WEBHOOK_RETRY_SCHEDULE delay 2 ("soon") must be a whole number with a unit'],
    [{ JOBS_PER_ACCOUNT: "0" }, "JOBS_PER_ACCOUNT must be a positive integer"],
    [{ JOBS_QUEUED_PER_ACCOUNT: "-1" }, "JOBS_QUEUED_PER_ACCOUNT must be a positive integer"],
    [{ WEBHOOK_ENDPOINT_CONCURRENCY: "0" }, "WEBHOOK_ENDPOINT_CONCURRENCY must be a positive integer"],
    [{ WEBHOOK_ENDPOINT_CONCURRENCY: "65" }, "WEBHOOK_ENDPOINT_CONCURRENCY must be at most 64"],
    [{ FILES_WRITE_LEASE_MS: "0" }, "FILES_WRITE_LEASE_MS must be a positive integer"],
    [{ FILES_SWEEP_INTERVAL_MS: "1m" }, "FILES_SWEEP_INTERVAL_MS must be a positive integer"],
    [{ FILES_QUOTA_BYTES: "10GiB" }, "FILES_QUOTA_BYTES must be a positive number of bytes"],
    [{ FILES_QUOTA_BYTES: "9999999999999999" }, "FILES_QUOTA_BYTES must be at most 9007199254740991"],
    [{ WORKER_METRICS_PORT: "none" }, "WORKER_METRICS_PORT must be a port number"],
    [{ WORKER_METRICS_PORT: "65535", WORKERS: "2" }, "WORKER_METRICS_PORT leaves no port for worker 2 (the workers take 2 ports from it)"],
    [{ WORKER_METRICS_PORT: "9463", WORKERS: "3" }, "WORKER_METRICS_PORT gives worker 2 port 9464, which METRICS_PORT uses"],
  ])("refuses %o with one line naming the variable", (env, message) => {
    expect(() => parseStackConfig(env)).toThrow(message);
  });
});
