import { Server, ServerCredentials, status as GrpcStatus, credentials } from "@grpc/grpc-js";
import { ReflectionService } from "@grpc/reflection";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminService, ResourceService, ResourceStatus, file_rms_v1_admin, file_rms_v1_resources } from "../index.js";
import { RpcError, addService, createClient, reflectionPackageDefinition, type ServiceImplementation } from "../index.js";

// A tiny hand-written ResourceService: this spec tests the adapter, not the core.
const implementation: ServiceImplementation<typeof ResourceService> = {
  async createResource(request, context) {
    if (request.name === "boom") throw new Error("secret driver text that must not leak");
    if (request.name.startsWith("half"))
      throw new RpcError(GrpcStatus.INVALID_ARGUMENT, {
        type: "invalid_request_error",
        code: "parameter_invalid",
        param: "name",
        message: `bad '${request.name.slice(0, 5)}'`,
      });
    if (request.name === "")
      throw new RpcError(GrpcStatus.INVALID_ARGUMENT, {
        type: "invalid_request_error",
        code: "parameter_invalid_empty",
        param: "name",
        message: "name is empty",
      });
    return {
      resource: {
        id: "res_x",
        name: `${request.name}:${context.metadata.get("rms-request-id")[0] ?? ""}`,
        status: request.status,
        metadata: request.metadata,
        created: 1_700_000_000n,
      },
    };
  },
  // Waits until its caller's deadline has passed, then says whether it saw the call as aborted.
  async getResource(request, context) {
    if (request.id === "res_wait") {
      await new Promise((resolve) => setTimeout(resolve, 300));
      seenAborted.push(context.signal.aborted);
    } else seenAborted.push(context.signal.aborted);
    return {};
  },
  updateResource: async () => ({}),
  deleteResource: async () => ({ id: "res_x" }),
  listResources: async () => ({ hasMore: false }),
  searchResources: async () => ({ hasMore: false }),
};

/** What `getResource` saw of `context.signal.aborted`, call by call. */
const seenAborted: boolean[] = [];
let server: Server;
let address: string;
beforeAll(async () => {
  server = new Server();
  addService(server, ResourceService, implementation, {
    authorize(context) {
      if (context.metadata.get("authorization")[0] !== "Bearer token") {
        throw new RpcError(GrpcStatus.UNAUTHENTICATED, { type: "authentication_error", code: "admin_token_invalid", message: "bad token" });
      }
    },
  });
  new ReflectionService(reflectionPackageDefinition([file_rms_v1_resources, file_rms_v1_admin])).addToServer(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  address = `127.0.0.1:${port}`;
});
afterAll(() => server.forceShutdown());

describe("grpc-js adapter for protobuf-es services", () => {
  it("round-trips typed messages and per-call metadata", async () => {
    const client = createClient(ResourceService, address, { metadata: { authorization: "Bearer token" } });
    const { resource } = await client.createResource(
      { name: "a", status: ResourceStatus.PAUSED, metadata: [{ key: "__proto__", value: "v" }] },
      { metadata: { "rms-request-id": "req_1" } },
    );
    expect(resource?.name).toBe("a:req_1");
    expect(resource?.status).toBe(ResourceStatus.PAUSED);
    expect(resource?.metadata.map((m) => [m.key, m.value])).toEqual([["__proto__", "v"]]);
    expect(resource?.created).toBe(1_700_000_000n);
    client.close();
  });

  it("carries the structured error detail to the caller", async () => {
    const client = createClient(ResourceService, address, { metadata: { authorization: "Bearer token" } });
    const error = await client.createResource({ name: "" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toMatchObject({ grpcCode: GrpcStatus.INVALID_ARGUMENT, type: "invalid_request_error", code: "parameter_invalid_empty", param: "name" });
    client.close();
  });

  it("answers an error whose message holds half of a surrogate pair, and keeps serving (grpc-js would throw and end the process)", async () => {
    const client = createClient(ResourceService, address, { metadata: { authorization: "Bearer token" } });
    // "half" and the first UTF-16 unit of an emoji: the message quotes exactly that lone surrogate.
    const error = (await client.createResource({ name: "half\u{1F600}" }).catch((e: unknown) => e)) as RpcError;
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toMatchObject({ grpcCode: GrpcStatus.INVALID_ARGUMENT, code: "parameter_invalid", param: "name" });
    expect(error.message.isWellFormed()).toBe(true);
    expect((await client.createResource({ name: "after" })).resource?.name).toBe("after:");
    client.close();
  });

  it("turns an unexpected exception into INTERNAL without leaking its text", async () => {
    const client = createClient(ResourceService, address, { metadata: { authorization: "Bearer token" } });
    const error = (await client.createResource({ name: "boom" }).catch((e: unknown) => e)) as RpcError;
    expect(error.grpcCode).toBe(GrpcStatus.INTERNAL);
    expect(error.code).toBe("internal_error");
    expect(error.message).not.toContain("driver");
    client.close();
  });

  it("refuses calls that the authorize hook rejects", async () => {
    const client = createClient(ResourceService, address);
    await expect(client.listResources({})).rejects.toMatchObject({ grpcCode: GrpcStatus.UNAUTHENTICATED, code: "admin_token_invalid" });
    client.close();
  });

  it("reports UNAVAILABLE as service_unavailable when nothing listens", async () => {
    const client = createClient(AdminService, "127.0.0.1:1", { timeoutMs: 2000 });
    await expect(client.createAccount({})).rejects.toMatchObject({ grpcCode: GrpcStatus.UNAVAILABLE, code: "service_unavailable" });
    client.close();
  });

  it("serves reflection built from protobuf-es descriptors", async () => {
    const { loadSync } = await import("@grpc/proto-loader");
    const { loadPackageDefinition } = await import("@grpc/grpc-js");
    const reflectionProto = new URL("../../../../node_modules/@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto", import.meta.url).pathname;
    const pkg = loadPackageDefinition(loadSync(reflectionProto)) as any;
    const stub = new pkg.grpc.reflection.v1.ServerReflection(address, credentials.createInsecure());
    const call = stub.ServerReflectionInfo();
    const reply = await new Promise<any>((resolve, reject) => {
      call.on("data", resolve);
      call.on("error", reject);
      call.write({ listServices: "" });
    });
    call.end();
    stub.close();
    const names = reply.listServicesResponse.service.map((s: { name: string }) => s.name);
    expect(names).toEqual(expect.arrayContaining(["rms.v1.ResourceService", "rms.v1.AdminService"]));
  });

  it("tells a handler its call was aborted once the caller's deadline passed, and not a call still in time", async () => {
    const client = createClient(ResourceService, address, { metadata: { authorization: "Bearer token" } });
    seenAborted.length = 0;
    await client.getResource({ id: "res_now" }, { timeoutMs: 5_000 });
    await expect(client.getResource({ id: "res_wait" }, { timeoutMs: 50 })).rejects.toMatchObject({ grpcCode: GrpcStatus.DEADLINE_EXCEEDED });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(seenAborted).toEqual([false, true]);
    client.close();
  });
});
