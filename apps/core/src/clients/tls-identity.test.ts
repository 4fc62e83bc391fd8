// Under core's mutual TLS a client is known by its certificate's subject alternative name, without a token; server
// reflection, where it is not open (off loopback), answers known clients only, and health answers everyone.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { createCoreClient, type CoreClient } from "@rms/client";
import { Health, createClient, mutualTlsCredentials } from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startCore, type RunningCore } from "../server.js";
import { writeTestPki, type TestPki } from "../testing/certs.js";
import { ADMIN_TOKEN } from "../testutil/harness.js";
import { reflect } from "../testutil/reflection.js";

const dir = mkdtempSync(join(tmpdir(), "rms-clients-tls-"));
const databaseName = testDatabaseName("core");
const clientsFile = join(dir, "clients.json");
let pki: TestPki;
let core: RunningCore;
const accounts = { a: "", b: "" };
const opened: CoreClient[] = [];

/** A client of core presenting the named certificate, and a token when given. */
function client(certificate: "billing" | "stranger", token?: string): CoreClient {
  const made = createCoreClient({
    address: core.address,
    ...(token ? { token } : {}),
    tls: { caFile: pki.caFile, ...pki.clients[certificate]! },
    deadlineMs: 5_000,
    retry: { maxAttempts: 1 },
  });
  opened.push(made);
  return made;
}
const channel = (certificate: "billing" | "stranger") => mutualTlsCredentials({ caFile: pki.caFile, ...pki.clients[certificate]! });

beforeAll(async () => {
  pki = await writeTestPki(dir, { billing: ["billing.internal", "spiffe://rms.example/billing"], stranger: ["stranger.internal"] });
  const read = (file: string) => readFileSync(file);
  writeFileSync(clientsFile, JSON.stringify({ clients: [] }));
  core = await startCore({
    mongoUri: inject("mongoUri"),
    databaseName,
    adminToken: ADMIN_TOKEN,
    tls: { cert: read(pki.certFile), key: read(pki.keyFile), ca: read(pki.caFile) },
    // As off loopback (a test listens on loopback only).
    reflection: "known clients",
    clients: { file: clientsFile, entries: [] },
  });
  const operator = client("stranger", ADMIN_TOKEN);
  for (const name of ["a", "b"] as const) accounts[name] = (await operator.admin.createAccount({})).account!.id;
  const billing = {
    name: "billing",
    tls_san: ["spiffe://rms.example/billing"],
    methods: ["rms.v1.ResourceService/ListResources"],
    accounts: [accounts.a],
    modes: ["test"],
  };
  writeFileSync(clientsFile, JSON.stringify({ clients: [billing] }));
  expect(core.reloadClients()).toBe(true);
});

afterAll(async () => {
  for (const made of opened) made.close();
  await core?.mongo.db(databaseName).dropDatabase();
  await core?.stop(1_000);
  rmSync(dir, { recursive: true, force: true });
});

describe("a client known by its certificate", () => {
  it("calls what its entry allows, on its accounts, without a token", async () => {
    const billing = client("billing");
    expect((await billing.resources.listResources({ tenant: { accountId: accounts.a, livemode: false }, limit: 1 })).resources).toEqual([]);
    await expect(billing.resources.createResource({ tenant: { accountId: accounts.a, livemode: false }, name: "x" })).rejects.toMatchObject({
      grpcCode: GrpcStatus.PERMISSION_DENIED,
      code: "method_not_allowed",
    });
    await expect(billing.resources.listResources({ tenant: { accountId: accounts.b, livemode: false } })).rejects.toMatchObject({
      grpcCode: GrpcStatus.NOT_FOUND,
    });
  });

  it("is UNAUTHENTICATED when its certificate names no client, or when the token it sends is unknown (a token, when sent, decides)", async () => {
    await expect(client("stranger").resources.listResources({ tenant: { accountId: accounts.a, livemode: false } })).rejects.toMatchObject({
      grpcCode: GrpcStatus.UNAUTHENTICATED,
    });
    await expect(
      client("billing", "not-a-known-token-0123456789").resources.listResources({ tenant: { accountId: accounts.a, livemode: false } }),
    ).rejects.toMatchObject({
      grpcCode: GrpcStatus.UNAUTHENTICATED,
    });
  });
});

describe("off loopback", () => {
  it("reflection answers known clients only: by certificate or by token", async () => {
    await expect(reflect(core.address, { listServices: "" }, { credentials: channel("stranger") })).rejects.toMatchObject({ code: GrpcStatus.UNAUTHENTICATED });
    const byCertificate = await reflect(core.address, { listServices: "" }, { credentials: channel("billing") });
    expect(byCertificate.listServicesResponse?.service.map((s) => s.name)).toContain("rms.v1.ResourceService");
    const byToken = await reflect(
      core.address,
      { listServices: "" },
      { credentials: channel("stranger"), metadata: { authorization: `Bearer ${ADMIN_TOKEN}` } },
    );
    expect(byToken.listServicesResponse?.service.map((s) => s.name)).toContain("rms.v1.AdminService");
  });

  it("health answers anyone (the probes)", async () => {
    const health = createClient(Health, core.address, { credentials: channel("stranger"), timeoutMs: 5_000 });
    expect((await health.check({ service: "" })).status).toBeGreaterThan(0);
    health.close();
  });
});
