// The client against a real gRPC server of ResourceService (this process, on loopback) that fails as told: what it
// retries, with which metadata, and within which deadline.
import { Server, ServerCredentials, status as GrpcStatus } from "@grpc/grpc-js";
import { context, propagation, trace, TraceFlags } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { AdminService, ResourceService, RpcError, addService, type CallContext } from "@rms/proto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createCoreClient, type CoreClient } from "./index.js";

/** What the server saw of each attempt. */
interface Seen {
  readonly method: string;
  readonly metadata: Record<string, string>;
  readonly deadline: number;
}

let seen: Seen[] = [];
/** How many of the next attempts fail, and with what. */
let failures: { left: number; code: GrpcStatus } = { left: 0, code: GrpcStatus.UNAVAILABLE };
let hang = false;

/** Records an attempt, then fails it as told or answers `answer`. */
async function attempt<T>(context: CallContext, answer: T): Promise<T> {
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(context.metadata.getMap())) metadata[key] = String(value);
  seen.push({ method: context.method.replace(/^.*\//, ""), metadata, deadline: context.deadline });
  if (failures.left > 0) {
    failures.left--;
    throw new RpcError(failures.code, { type: "api_error", code: "service_unavailable", message: "told to fail" });
  }
  return answer;
}

const resource = { id: "res_1", name: "one", metadata: [], created: 1n, livemode: false };
const server = new Server();
let address = "";
beforeAll(async () => {
  const never = () => new Promise<never>(() => {});
  addService(server, ResourceService, {
    createResource: (request, ctx) => attempt(ctx, { resource: { ...resource, name: request.name } }),
    getResource: (request, ctx) => (hang ? never() : attempt(ctx, { resource: { ...resource, id: request.id } })),
    updateResource: (_request, ctx) => attempt(ctx, { resource }),
    deleteResource: (request, ctx) => attempt(ctx, { id: request.id }),
    listResources: (_request, ctx) => attempt(ctx, { resources: [resource] }),
    searchResources: (_request, ctx) => attempt(ctx, { resources: [] }),
  });
  const unused = () => Promise.reject(new RpcError(GrpcStatus.UNIMPLEMENTED, { type: "api_error", code: "internal_error", message: "not in this test" }));
  addService(server, AdminService, {
    createAccount: (_request, ctx) => attempt(ctx, { account: { id: "acct_1", created: 1n } }),
    listAccounts: (_request, ctx) => attempt(ctx, { accounts: [] }),
    createKey: unused,
    listKeys: unused,
    revokeKey: unused,
    verifyKey: unused,
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  address = `127.0.0.1:${port}`;
});
afterAll(() => server.forceShutdown());

let core: CoreClient;
beforeEach(() => {
  seen = [];
  failures = { left: 0, code: GrpcStatus.UNAVAILABLE };
  hang = false;
  core?.close();
  core = createCoreClient({ address, token: "billing-token-0123456789", retry: { initialBackoffMs: 10, maxBackoffMs: 50 } });
});
afterAll(() => core?.close());

const tenant = { accountId: "acct_1", livemode: false };

describe("retries of UNAVAILABLE", () => {
  it("repeats a read as it is", async () => {
    failures.left = 2;
    const { resource: got } = await core.resources.getResource({ tenant, id: "res_9" });
    expect(got?.id).toBe("res_9");
    expect(seen.map((s) => s.method)).toEqual(["GetResource", "GetResource", "GetResource"]);
    // One call, one request id, on every attempt; a read carries no idempotency key.
    expect(new Set(seen.map((s) => s.metadata["rms-request-id"])).size).toBe(1);
    expect(seen.every((s) => s.metadata["idempotency-key"] === undefined)).toBe(true);
    expect(seen[0]!.metadata["authorization"]).toBe("Bearer billing-token-0123456789");
  });

  it("repeats a write under the one idempotency key it made for the call; the next call has a key of its own", async () => {
    failures.left = 2;
    await core.resources.createResource({ tenant, name: "keyed" });
    const keys = seen.map((s) => s.metadata["idempotency-key"]);
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    await core.resources.createResource({ tenant, name: "another" });
    expect(seen.at(-1)!.metadata["idempotency-key"]).not.toBe(keys[0]);
  });

  it("keeps the caller's own idempotency key", async () => {
    await core.resources.deleteResource({ tenant, id: "res_1" }, { idempotencyKey: "delete-res_1" });
    expect(seen.at(-1)!.metadata["idempotency-key"]).toBe("delete-res_1");
  });

  it("gives up after the attempts allowed, with core's error", async () => {
    failures.left = 10;
    await expect(core.resources.listResources({ tenant })).rejects.toMatchObject({ grpcCode: GrpcStatus.UNAVAILABLE, code: "service_unavailable" });
    expect(seen).toHaveLength(4);
  });

  it("sends the operator's account and key writes once, without a key: core keeps none for them", async () => {
    failures.left = 1;
    await expect(core.admin.createAccount({})).rejects.toMatchObject({ grpcCode: GrpcStatus.UNAVAILABLE });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.metadata["idempotency-key"]).toBeUndefined();
    // Its reads are repeated as any other.
    failures.left = 1;
    await core.admin.listAccounts({ limit: 1 });
    expect(seen.map((s) => s.method)).toEqual(["CreateAccount", "ListAccounts", "ListAccounts"]);
  });

  it("repeats nothing else, and nothing at all when told not to", async () => {
    failures = { left: 1, code: GrpcStatus.INVALID_ARGUMENT };
    await expect(core.resources.getResource({ tenant, id: "res_1" })).rejects.toMatchObject({ grpcCode: GrpcStatus.INVALID_ARGUMENT });
    expect(seen).toHaveLength(1);
    const once = createCoreClient({ address, retry: { maxAttempts: 1 } });
    failures = { left: 1, code: GrpcStatus.UNAVAILABLE };
    await expect(once.resources.getResource({ tenant, id: "res_1" })).rejects.toMatchObject({ grpcCode: GrpcStatus.UNAVAILABLE });
    expect(seen).toHaveLength(2);
    once.close();
  });
});

describe("deadlines", () => {
  it("gives every call the default deadline, and a call may give its own", async () => {
    const before = Date.now();
    await core.resources.listResources({ tenant });
    expect(seen[0]!.deadline).toBeGreaterThan(before + 5_000);
    expect(seen[0]!.deadline).toBeLessThanOrEqual(Date.now() + 10_000);
    hang = true;
    await expect(core.resources.getResource({ tenant, id: "res_1" }, { timeoutMs: 200 })).rejects.toMatchObject({ grpcCode: GrpcStatus.DEADLINE_EXCEEDED });
  });
});

describe("what a call carries", () => {
  it("a new request id per call, or the one the service is serving", async () => {
    await core.resources.listResources({ tenant });
    await core.resources.listResources({ tenant });
    const [first, second] = seen.map((s) => s.metadata["rms-request-id"]);
    expect(first).toMatch(/^req_[0-9A-Za-z]{24}$/);
    expect(second).not.toBe(first);
    await core.resources.listResources({ tenant }, { requestId: "req_given" });
    expect(seen.at(-1)!.metadata["rms-request-id"]).toBe("req_given");
    const serving = createCoreClient({ address, requestId: () => "req_serving" });
    await serving.resources.listResources({ tenant });
    expect(seen.at(-1)!.metadata["rms-request-id"]).toBe("req_serving");
    serving.close();
  });

  it("the trace context of the service's own tracing (its propagator and active span)", async () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    try {
      const span = { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.SAMPLED };
      await context.with(trace.setSpanContext(context.active(), span), () => core.resources.listResources({ tenant }));
      expect(seen.at(-1)!.metadata["traceparent"]).toBe("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    } finally {
      propagation.disable();
      context.disable();
    }
  });
});
