import { create } from "@bufbuild/protobuf";
import { status as GrpcStatus } from "@grpc/grpc-js";
import {
  ApiKeySchema,
  KeyKind,
  ResourceSchema,
  ResourceStatus,
  RpcError,
  type ApiKey,
  type CallOptions,
  type Resource,
} from "@rms/proto";
import type { CoreClients, ServingStatus } from "../core.js";

/**
 * An in-memory stand-in for core, for unit tests of the gateway's own rules
 * (parsing, errors, scopes, headers). Domain rules live in core and are
 * covered by the end-to-end tests against the real one.
 */
export interface FakeCore extends CoreClients {
  /** Registers a key; `secret` is what clients send. */
  addKey(secret: string, key: { kind: KeyKind; accountId?: string; livemode?: boolean; scopes?: string[]; id?: string }): ApiKey;
  /** Makes the next calls of `method` fail with this error. */
  failWith(method: string, error: RpcError | Error | undefined): void;
  /** Every call made, in order, with its request and metadata. */
  readonly calls: { method: string; request: unknown; metadata: Readonly<Record<string, string>> }[];
  readonly revoked: string[];
  healthStatus: ServingStatus | "unreachable";
  /** Delay of every resource call, to hold requests in flight. */
  latencyMs: number;
}

const ALL_SCOPES = ["resources:read", "resources:write", "jobs:read", "jobs:write", "webhooks:write", "events:read"];
const notFound = (id: string) =>
  new RpcError(GrpcStatus.NOT_FOUND, { type: "invalid_request_error", code: "resource_missing", param: "id", message: `No such resource: '${id}'` });

export function fakeCore(): FakeCore {
  const keys = new Map<string, ApiKey>();
  const resources = new Map<string, Resource & { accountId: string }>();
  const failures = new Map<string, RpcError | Error>();
  const calls: FakeCore["calls"] = [];
  const revoked: string[] = [];
  let counter = 0;
  let clock = 1_700_000_000;

  function call<T>(method: string, request: unknown, options: CallOptions | undefined, run: () => T): Promise<T> {
    calls.push({ method, request, metadata: { ...options?.metadata } });
    const failure = failures.get(method);
    if (failure) return Promise.reject(failure);
    const delay = method === "verifyKey" || method === "revokeKey" ? 0 : fake.latencyMs;
    return new Promise<void>((resolve) => setTimeout(resolve, delay)).then(run);
  }
  const owned = (tenant: { accountId: string; livemode: boolean } | undefined, id: string) => {
    const resource = resources.get(id);
    if (!resource || resource.accountId !== tenant?.accountId || resource.livemode !== tenant.livemode) throw notFound(id);
    return resource;
  };
  const statusOf = (status: ResourceStatus | undefined) => (status === undefined || status === ResourceStatus.UNSPECIFIED ? undefined : status);

  const fake: FakeCore = {
    calls,
    revoked,
    healthStatus: "SERVING",
    latencyMs: 0,
    addKey(secret, init) {
      const key = create(ApiKeySchema, {
        id: init.id ?? `key_${++counter}`,
        accountId: init.accountId ?? "acct_1",
        kind: init.kind,
        livemode: init.livemode ?? false,
        scopes: init.scopes ?? (init.kind === KeyKind.SECRET ? ALL_SCOPES : init.kind === KeyKind.PUBLISHABLE ? ["resources:read"] : []),
      });
      keys.set(secret, key);
      return key;
    },
    failWith(method, error) {
      if (error) failures.set(method, error);
      else failures.delete(method);
    },
    admin: {
      ...({
      verifyKey: (request, options) =>
        call("verifyKey", request, options, () => {
          const key = keys.get(request.secret ?? "");
          if (!key) throw new RpcError(GrpcStatus.UNAUTHENTICATED, { type: "authentication_error", code: "api_key_invalid", message: "Invalid API key provided." });
          if (revoked.includes(key.id)) {
            throw new RpcError(GrpcStatus.UNAUTHENTICATED, { type: "authentication_error", code: "api_key_revoked", message: "This API key has been revoked." });
          }
          return { $typeName: "rms.v1.VerifyKeyResponse", key } as never;
        }),
      revokeKey: (request, options) =>
        call("revokeKey", request, options, () => {
          revoked.push(request.keyId ?? "");
          return { $typeName: "rms.v1.RevokeKeyResponse" } as never;
        }),
      } satisfies Pick<CoreClients["admin"], "verifyKey" | "revokeKey">),
    } as unknown as CoreClients["admin"],
    resources: {
      ...({
      createResource: (request, options) =>
        call("createResource", request, options, () => {
          const id = `res_${String(++counter).padStart(22, "0")}`;
          const resource = Object.assign(
            create(ResourceSchema, {
              id,
              name: request.name ?? "",
              status: statusOf(request.status) ?? ResourceStatus.ACTIVE,
              metadata: (request.metadata ?? []).map((e) => ({ key: e.key ?? "", value: e.value ?? "" })),
              created: BigInt(++clock),
              livemode: request.tenant?.livemode ?? false,
            }),
            { accountId: request.tenant?.accountId ?? "" },
          );
          resources.set(id, resource);
          return { resource } as never;
        }),
      getResource: (request, options) => call("getResource", request, options, () => ({ resource: owned(request.tenant as never, request.id ?? "") }) as never),
      updateResource: (request, options) =>
        call("updateResource", request, options, () => {
          const resource = owned(request.tenant as never, request.id ?? "");
          if (request.name !== undefined) resource.name = request.name;
          resource.status = statusOf(request.status) ?? resource.status;
          const merged = new Map(request.clearMetadata ? [] : resource.metadata.map((e) => [e.key, e.value]));
          for (const { key = "", value = "" } of request.metadata ?? []) {
            if (value === "") merged.delete(key);
            else merged.set(key, value);
          }
          resource.metadata = [...merged].map(([key, value]) => create(ResourceSchema.field.metadata.message!, { key, value }) as never);
          return { resource } as never;
        }),
      deleteResource: (request, options) =>
        call("deleteResource", request, options, () => {
          owned(request.tenant as never, request.id ?? "");
          resources.delete(request.id ?? "");
          return { id: request.id } as never;
        }),
      listResources: (request, options) =>
        call("listResources", request, options, () => {
          const all = [...resources.values()]
            .filter((r) => r.accountId === request.tenant?.accountId && r.livemode === request.tenant.livemode)
            .filter((r) => !statusOf(request.status) || r.status === request.status)
            .sort((a, b) => (a.id < b.id ? 1 : -1));
          const start = request.startingAfter ? all.findIndex((r) => r.id === request.startingAfter) + 1 : 0;
          const limit = request.limit || 20;
          return { resources: all.slice(start, start + limit), hasMore: all.length > start + limit } as never;
        }),
      } satisfies CoreClients["resources"]),
    } as CoreClients["resources"],
    health() {
      return fake.healthStatus === "unreachable"
        ? Promise.reject(new Error("connect ECONNREFUSED"))
        : Promise.resolve(fake.healthStatus);
    },
    close() {},
  };
  return fake;
}
