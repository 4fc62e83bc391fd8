// Trace context across a gRPC call through the adapter, with tracing started as a process starts it and spans
// exported to an in-process OTLP receiver: the server's span is a child of the client's, in the caller's trace.
import { Server, ServerCredentials, status as GrpcStatus } from "@grpc/grpc-js";
import { inSpan, storedTrace, type StoredTrace, type Tracing } from "@rms/telemetry";
import { startTracingToReceiver, type OtlpReceiver } from "@rms/telemetry/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RpcError, ResourceService, addService, createClient, type ServiceImplementation } from "../index.js";

let seen: { traceparent: unknown; stored: StoredTrace | undefined } | undefined;
const implementation: ServiceImplementation<typeof ResourceService> = {
  async createResource(request, context) {
    seen = { traceparent: context.metadata.get("traceparent")[0], stored: storedTrace() };
    if (request.name === "boom") throw new Error("internal");
    if (request.name === "") throw new RpcError(GrpcStatus.INVALID_ARGUMENT, { type: "invalid_request_error", code: "parameter_missing", message: "name" });
    return { resource: { id: "res_x", name: request.name } };
  },
  getResource: async () => ({}),
  updateResource: async () => ({}),
  deleteResource: async () => ({ id: "res_x" }),
  listResources: async () => ({ hasMore: false }),
  searchResources: async () => ({ hasMore: false }),
};

let receiver: OtlpReceiver;
let tracing: Tracing;
let server: Server;
let address: string;
beforeAll(async () => {
  ({ receiver, tracing } = await startTracingToReceiver("rms-proto-test"));
  server = new Server();
  // The server names the caller on its span (core: the calling client's name in its caller table).
  addService(server, ResourceService, implementation, {
    spanAttributes: (context) => ({ "rms.client": context.metadata.get("x-caller")[0] === "billing" ? "billing" : "anonymous" }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  address = `127.0.0.1:${port}`;
});
afterAll(async () => {
  server.forceShutdown();
  await tracing.shutdown();
  await receiver.close();
});

it("sends the caller's trace context as metadata; the handler runs in a SERVER span of the same trace; both are exported", async () => {
  const client = createClient(ResourceService, address, { metadata: { "x-caller": "billing" } });
  let traceId = "";
  let requestSpan = "";
  await inSpan("request", {}, async (span) => {
    traceId = span.spanContext().traceId;
    requestSpan = span.spanContext().spanId;
    await client.createResource({ name: "a" });
    await expect(client.createResource({ name: "" })).rejects.toThrow(RpcError);
    await expect(client.createResource({ name: "boom" })).rejects.toThrow(RpcError);
  });
  client.close();
  expect(seen!.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  expect(seen!.stored!.traceparent).toMatch(new RegExp(`^00-${traceId}-`));
  await tracing.shutdown();

  const spans = receiver.spans().filter((s) => s.traceId === traceId);
  const clients = spans.filter((s) => s.kind === 3);
  const servers = spans.filter((s) => s.kind === 2);
  expect(clients.map((s) => s.name)).toEqual(Array(3).fill("rms.v1.ResourceService/CreateResource"));
  expect(clients.every((s) => s.parentSpanId === requestSpan)).toBe(true);
  expect(servers).toHaveLength(3);
  for (const s of servers) expect(clients.map((c) => c.spanId)).toContain(s.parentSpanId);
  expect(servers[0]!.attributes).toMatchObject({
    "rpc.system": "grpc",
    "rpc.service": "rms.v1.ResourceService",
    "rpc.method": "CreateResource",
    "rms.client": "billing",
  });
  // The caller's INVALID_ARGUMENT is an error of the client span only; the server's INTERNAL of both.
  expect(servers.map((s) => [s.attributes["rpc.grpc.status_code"], s.statusCode]).sort()).toEqual([
    [0, 0],
    [13, 2],
    [3, 0],
  ]);
  expect(clients.filter((s) => s.statusCode === 2)).toHaveLength(2);
});
