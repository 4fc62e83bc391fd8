import { ConfigError } from "@rms/config";
import { describe, expect, it } from "vitest";
import { PRODUCTION_SAMPLE_RATIO, tracingConfig } from "./config.js";

describe("tracingConfig", () => {
  it("is off without any OTEL_ variable: no exporter, the process's own service name", () => {
    const config = tracingConfig({}, "rms-core");
    expect(config.exporter).toBeNull();
    expect(config.serviceName).toBe("rms-core");
    expect(config.sampler).toEqual({ name: "parentbased_always_on", ratio: 1 });
  });

  it("is on with an OTLP endpoint, or OTEL_TRACES_EXPORTER=otlp; http/protobuf unless told otherwise", () => {
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }, "x").exporter).toEqual({ protocol: "http/protobuf" });
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector/v1/traces" }, "x").exporter).toEqual({ protocol: "http/protobuf" });
    expect(tracingConfig({ OTEL_TRACES_EXPORTER: "otlp" }, "x").exporter).toEqual({ protocol: "http/protobuf" });
    expect(tracingConfig({ OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }, "x").exporter).toEqual({ protocol: "http/json" });
    expect(
      tracingConfig({ OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/protobuf" }, "x")
        .exporter,
    ).toEqual({
      protocol: "http/protobuf",
    });
  });

  it("stays off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, whatever the endpoint", () => {
    expect(tracingConfig({ OTEL_SDK_DISABLED: "true", OTEL_TRACES_EXPORTER: "otlp" }, "x").exporter).toBeNull();
    expect(tracingConfig({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }, "x").exporter).toBeNull();
    expect(tracingConfig({ OTEL_SDK_DISABLED: "false", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }, "x").exporter).not.toBeNull();
    // Empty values count as unset, as for every other variable.
    expect(tracingConfig({ OTEL_TRACES_EXPORTER: "", OTEL_EXPORTER_OTLP_ENDPOINT: "" }, "x").exporter).toBeNull();
  });

  it("takes the service name from OTEL_SERVICE_NAME, then OTEL_RESOURCE_ATTRIBUTES, and keeps the other attributes", () => {
    const fromAttributes = tracingConfig({ OTEL_RESOURCE_ATTRIBUTES: "service.name=a,deployment.environment=prod" }, "x");
    expect(fromAttributes.serviceName).toBe("a");
    expect(fromAttributes.resourceAttributes).toEqual({ "deployment.environment": "prod" });
    expect(tracingConfig({ OTEL_SERVICE_NAME: "b", OTEL_RESOURCE_ATTRIBUTES: "service.name=a" }, "x").serviceName).toBe("b");
  });

  it("samples a ratio of traces by default in production (NODE_ENV=production), every trace elsewhere; the variables still decide", () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    expect(tracingConfig({ ...on, NODE_ENV: "production" }, "x").sampler).toEqual({ name: "parentbased_traceidratio", ratio: PRODUCTION_SAMPLE_RATIO });
    expect(tracingConfig({ ...on, NODE_ENV: "development" }, "x").sampler).toEqual({ name: "parentbased_always_on", ratio: 1 });
    expect(tracingConfig({ ...on, NODE_ENV: "production", OTEL_TRACES_SAMPLER_ARG: "0.5" }, "x").sampler).toEqual({
      name: "parentbased_traceidratio",
      ratio: 0.5,
    });
    expect(tracingConfig({ ...on, NODE_ENV: "production", OTEL_TRACES_SAMPLER: "always_on" }, "x").sampler.name).toBe("always_on");
  });

  it("reads the sampler and the batch settings", () => {
    const config = tracingConfig({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.25", OTEL_BSP_SCHEDULE_DELAY: "200" }, "x");
    expect(config.sampler).toEqual({ name: "parentbased_traceidratio", ratio: 0.25 });
    expect(config.batch.scheduledDelayMs).toBe(200);
  });

  it.each([
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json"],
    [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "thrift" }, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be http/protobuf or http/json"],
    [{ OTEL_TRACES_EXPORTER: "zipkin" }, "OTEL_TRACES_EXPORTER must be otlp or none (zipkin is not supported)"],
    [{ OTEL_TRACES_SAMPLER: "jaeger_remote" }, "OTEL_TRACES_SAMPLER must be one of"],
    [{ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" }, "OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL"],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "grpc://c:4317" }, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http:// or https:// URL"],
    [{ OTEL_SDK_DISABLED: "yes" }, "OTEL_SDK_DISABLED must be true or false"],
    [{ OTEL_BSP_SCHEDULE_DELAY: "-1" }, "OTEL_BSP_SCHEDULE_DELAY must be a positive integer"],
  ])("refuses %o with one line naming the variable", (env, message) => {
    expect(() => tracingConfig(env, "x")).toThrow(ConfigError);
    expect(() => tracingConfig(env, "x")).toThrow(message);
  });
});
