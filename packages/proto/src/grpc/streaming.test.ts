import { Server } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus, ResourceService, addService, toServiceDefinition, type ServiceImplementation } from "../index.js";

// grpc.health.v1.Health has a unary method (Check) and a server-streaming one (Watch).
const health = {
  check: async () => ({ status: HealthCheckResponse_ServingStatus.SERVING }),
  watch: async () => ({ status: HealthCheckResponse_ServingStatus.SERVING }),
} as ServiceImplementation<typeof Health>;

describe("addService with streaming methods", () => {
  it("refuses a service with a streaming method, naming it, and registers nothing", () => {
    const server = new Server();
    expect(() => addService(server, Health, health)).toThrow("/grpc.health.v1.Health/Watch is server_streaming");
    // Nothing half-registered: the same server still takes the whole service from a correct registration
    // (grpc-js refuses a second registration of one service name, so this proves the first left nothing).
    const check = toServiceDefinition(Health)["check"]!;
    expect(() => server.addService({ check }, { check: () => undefined })).not.toThrow();
    expect(() => server.addService({ check }, { check: () => undefined })).toThrow("already provided");
    server.forceShutdown();
  });

  it("accepts a service whose methods are all unary", () => {
    const server = new Server();
    const unary = Object.fromEntries(ResourceService.methods.map((m) => [m.localName, async () => ({})])) as unknown as ServiceImplementation<typeof ResourceService>;
    expect(() => addService(server, ResourceService, unary)).not.toThrow();
    server.forceShutdown();
  });
});
