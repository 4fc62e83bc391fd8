// The built-in entries of the caller table over real gRPC: the gateway's credential reaches only what the gateway calls.
import { status as GrpcStatus } from "@grpc/grpc-js";
import {
  AdminService,
  EventService,
  JobService,
  KeyKind,
  PRESENTED_KEY_ID_METADATA,
  PRESENTED_KEY_METADATA,
  ResourceService,
  createClient,
  keyHash,
  methodPath,
} from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startCore, type RunningCore } from "../server.js";
import { DOMAINS, METHOD_CALLERS } from "../domains.js";
import { RPC_SCOPES } from "../grpc/scopes.js";
import { CROSS_TENANT_RPCS } from "./file.js";

const ADMIN_TOKEN = "permissions-test-admin-token-0123";
const GATEWAY_TOKEN = "permissions-test-gateway-token-0123";
let core: RunningCore;
const clients = (token: string) => {
  const options = { metadata: { authorization: `Bearer ${token}` }, timeoutMs: 5_000 };
  return {
    admin: createClient(AdminService, core.address, options),
    resources: createClient(ResourceService, core.address, options),
    jobs: createClient(JobService, core.address, options),
    events: createClient(EventService, core.address, options),
  };
};
let admin: ReturnType<typeof clients>;
let gateway: ReturnType<typeof clients>;
let stranger: ReturnType<typeof clients>;
const databaseName = testDatabaseName("core");
beforeAll(async () => {
  core = await startCore({ mongoUri: inject("mongoUri"), databaseName, adminToken: ADMIN_TOKEN, gatewayToken: GATEWAY_TOKEN });
  [admin, gateway, stranger] = [clients(ADMIN_TOKEN), clients(GATEWAY_TOKEN), clients("not-a-known-token-at-all")];
});
afterAll(async () => {
  for (const c of [admin, gateway, stranger]) for (const client of Object.values(c)) client.close();
  await core.mongo.db(databaseName).dropDatabase();
  await core.stop(1_000);
});

const denied = { grpcCode: GrpcStatus.PERMISSION_DENIED, code: "method_not_allowed" };

describe("the gateway's credential", () => {
  it("is refused PERMISSION_DENIED for creating and listing accounts and keys", async () => {
    const { account } = await admin.admin.createAccount({});
    await expect(gateway.admin.createAccount({})).rejects.toMatchObject(denied);
    await expect(gateway.admin.listAccounts({ limit: 1 })).rejects.toMatchObject(denied);
    await expect(gateway.admin.createKey({ accountId: account!.id, kind: KeyKind.SECRET })).rejects.toMatchObject(denied);
    await expect(gateway.admin.listKeys({ accountId: account!.id })).rejects.toMatchObject(denied);
    // Nothing was created by the refused calls.
    expect((await admin.admin.listKeys({ accountId: account!.id })).keys).toEqual([]);
  });

  it("verifies and revokes keys and makes every resource call", async () => {
    const { account } = await admin.admin.createAccount({});
    const { key, secret } = await admin.admin.createKey({ accountId: account!.id, kind: KeyKind.SECRET });
    expect((await gateway.admin.verifyKey({ secret })).key?.id).toBe(key!.id);
    const tenant = { accountId: account!.id, livemode: false };
    // The gateway acts for the key its client presented, as it does for every public request.
    const call = { metadata: { [PRESENTED_KEY_METADATA]: secret, [PRESENTED_KEY_ID_METADATA]: key!.id } };
    const { resource } = await gateway.resources.createResource({ tenant, name: "by the gateway" }, call);
    expect((await gateway.resources.getResource({ tenant, id: resource!.id }, call)).resource?.name).toBe("by the gateway");
    await gateway.resources.updateResource({ tenant, id: resource!.id, name: "renamed" }, call);
    expect((await gateway.resources.listResources({ tenant, limit: 10 }, call)).resources).toHaveLength(1);
    await gateway.resources.deleteResource({ tenant, id: resource!.id }, call);
    // Revoked by the secret it saw (its hash), never by id (issue 31).
    await expect(gateway.admin.revokeKey({ keyId: key!.id, reason: "plain_http" })).rejects.toMatchObject(denied);
    expect(Number((await gateway.admin.revokeKey({ secretHash: keyHash(secret), reason: "plain_http" })).key?.revokedAt)).toBeGreaterThan(0);
    expect((await admin.admin.listKeys({ accountId: account!.id })).keys[0]?.revokedAt).toBeGreaterThan(0n);
  });

  // Issue 31, item 7: core enforces key kind and scope per RPC as the gateway does per route, so the gateway's
  // credential plus a tenant's publishable (or narrowly restricted) key cannot write.
  it("with a publishable key: reads resources, writes nothing (publishable_key_read_only)", async () => {
    const { account } = await admin.admin.createAccount({});
    const tenant = { accountId: account!.id, livemode: false };
    const { resource } = await admin.resources.createResource({ tenant, name: "existing" });
    const { key, secret } = await admin.admin.createKey({ accountId: account!.id, kind: KeyKind.PUBLISHABLE });
    const call = { metadata: { [PRESENTED_KEY_METADATA]: secret, [PRESENTED_KEY_ID_METADATA]: key!.id } };
    expect((await gateway.resources.getResource({ tenant, id: resource!.id }, call)).resource?.name).toBe("existing");
    expect((await gateway.resources.listResources({ tenant, limit: 10 }, call)).resources).toHaveLength(1);
    const readOnly = { grpcCode: GrpcStatus.PERMISSION_DENIED, code: "publishable_key_read_only" };
    await expect(gateway.resources.createResource({ tenant, name: "sneaked in" }, call)).rejects.toMatchObject(readOnly);
    await expect(gateway.resources.updateResource({ tenant, id: resource!.id, name: "changed" }, call)).rejects.toMatchObject(readOnly);
    await expect(gateway.resources.deleteResource({ tenant, id: resource!.id }, call)).rejects.toMatchObject(readOnly);
    await expect(gateway.jobs.listJobs({ tenant, limit: 10 }, call)).rejects.toMatchObject(readOnly);
    expect((await admin.resources.getResource({ tenant, id: resource!.id })).resource?.name).toBe("existing");
  });

  it("with a restricted key: exactly its scopes (and those they imply), insufficient_scope otherwise", async () => {
    const { account } = await admin.admin.createAccount({});
    const tenant = { accountId: account!.id, livemode: false };
    const { key, secret } = await admin.admin.createKey({ accountId: account!.id, kind: KeyKind.RESTRICTED, scopes: ["resources:read", "jobs:write"] });
    const call = { metadata: { [PRESENTED_KEY_METADATA]: secret, [PRESENTED_KEY_ID_METADATA]: key!.id } };
    expect((await gateway.resources.listResources({ tenant, limit: 10 }, call)).resources).toEqual([]);
    expect((await gateway.jobs.listJobs({ tenant, limit: 10 }, call)).jobs).toEqual([]);
    const insufficient = { grpcCode: GrpcStatus.PERMISSION_DENIED, code: "insufficient_scope" };
    await expect(gateway.resources.createResource({ tenant, name: "sneaked in" }, call)).rejects.toMatchObject(insufficient);
    await expect(gateway.events.listEvents({ tenant, limit: 10 }, call)).rejects.toMatchObject(insufficient);
  });
  it("acts on no tenant's data without a presented API key (a leaked gateway token alone reads nothing)", async () => {
    const { account } = await admin.admin.createAccount({});
    const tenant = { accountId: account!.id, livemode: false };
    const { resource } = await admin.resources.createResource({ tenant, name: "the operator's" });
    const keyless = { grpcCode: GrpcStatus.PERMISSION_DENIED, code: "method_not_allowed" };
    await expect(gateway.resources.getResource({ tenant, id: resource!.id })).rejects.toMatchObject(keyless);
    await expect(gateway.resources.listResources({ tenant, limit: 10 })).rejects.toMatchObject(keyless);
    await expect(gateway.resources.createResource({ tenant, name: "sneaked in" })).rejects.toMatchObject(keyless);
    expect((await admin.resources.listResources({ tenant, limit: 10 })).resources.map((r) => r.name)).toEqual(["the operator's"]);
  });
});

describe("other credentials", () => {
  it("refuses an unknown token UNAUTHENTICATED, on every service", async () => {
    const unauthenticated = { grpcCode: GrpcStatus.UNAUTHENTICATED, code: "admin_token_invalid" };
    await expect(stranger.admin.verifyKey({ secret: "sk_test_x" })).rejects.toMatchObject(unauthenticated);
    await expect(stranger.resources.listResources({ tenant: { accountId: "acct_x" } })).rejects.toMatchObject(unauthenticated);
  });

  it("lets the admin token call everything", async () => {
    expect((await admin.admin.listAccounts({ limit: 1 })).accounts.length).toBe(1);
  });
});

it("gives every method of every served service its built-in callers (a new RPC is closed until it is listed)", () => {
  const methods = DOMAINS.flatMap((d) => d.services.flatMap((s) => s.service.methods))
    .map(methodPath)
    .sort();
  expect(Object.keys(METHOD_CALLERS).sort()).toEqual(methods);
});

// Every tenant RPC core serves has its scope in RPC_SCOPES (a new service's methods must be added there).
describe("RPC_SCOPES", () => {
  it("names the scope of every method of every domain's services", () => {
    const methods = DOMAINS.flatMap((domain) => domain.services)
      .filter(({ service }) => service.typeName !== "rms.v1.AdminService")
      .flatMap(({ service }) => service.methods.map((m) => methodPath(m)))
      .filter((m) => !CROSS_TENANT_RPCS.has(m));
    expect(methods.filter((m) => RPC_SCOPES[m] === undefined)).toEqual([]);
  });
});
