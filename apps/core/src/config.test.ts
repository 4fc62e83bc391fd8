import { describe, expect, it } from "vitest";
import { parseCoreConfig } from "./config.js";

const valid = { MONGODB_URI: "mongodb://127.0.0.1:27017/", RMS_ADMIN_TOKEN: "0123456789abcdef" };

describe("core configuration", () => {
  it("defaults the optional variables", () => {
    expect(parseCoreConfig(valid)).toMatchObject({ databaseName: "rms", address: "127.0.0.1:50051", logLevel: "info", metricsPort: 9465 });
  });

  it.each([
    [{ RMS_ADMIN_TOKEN: "0123456789abcdef" }, "MONGODB_URI is required"],
    [{ ...valid, MONGODB_URI: "http://x" }, "MONGODB_URI must be a mongodb:// or mongodb+srv:// URI"],
    [{ MONGODB_URI: valid.MONGODB_URI }, "RMS_ADMIN_TOKEN is required"],
    [{ ...valid, CORE_ADDR: "50051" }, "CORE_ADDR must be host:port"],
    [{ ...valid, CORE_METRICS_PORT: "http" }, "CORE_METRICS_PORT must be a port number"],
    [{ ...valid, CORE_METRICS_PORT: "70000" }, "CORE_METRICS_PORT must be a port number"],
    [{ ...valid, RMS_FAULTS: "everything:1" }, "RMS_FAULTS must be point:probability"],
    [{ ...valid, RMS_FAULTS: "resource.create:2" }, "RMS_FAULTS must be point:probability"],
    [{ ...valid, OTEL_TRACES_EXPORTER: "zipkin" }, "OTEL_TRACES_EXPORTER must be otlp or none (zipkin is not supported)"],
  ])("refuses %o with one line naming the variable", (env, message) => {
    expect(() => parseCoreConfig(env)).toThrow(message);
  });

  it("traces only when an OTLP exporter is asked for, as rms-core unless OTEL_SERVICE_NAME says otherwise", () => {
    expect(parseCoreConfig(valid).tracing).toMatchObject({ exporter: null, serviceName: "rms-core" });
    expect(parseCoreConfig({ ...valid, OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SERVICE_NAME: "core-eu" }).tracing).toMatchObject({
      exporter: { protocol: "http/protobuf" },
      serviceName: "core-eu",
    });
  });

  it("accepts fault points only when named", () => {
    expect(() => parseCoreConfig({ ...valid, RMS_FAULTS: "resource.create:0.5" })).not.toThrow();
  });
});
