// Core over TLS with client certificates: only clients with a certificate of the configured CA get in.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials } from "@grpc/grpc-js";
import { AdminService, createClient, mutualTlsCredentials } from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { parseCoreConfig } from "./config.js";
import { startCore, type RunningCore } from "./server.js";
import { writeTestPki, type TestPki } from "./testing/certs.js";

const ADMIN_TOKEN = "tls-test-admin-token-0123456789";
const dir = mkdtempSync(join(tmpdir(), "rms-core-tls-"));
let pki: TestPki;
let stranger: TestPki;
let core: RunningCore;
const databaseName = testDatabaseName("core");
beforeAll(async () => {
  pki = await writeTestPki(join(dir, "ours"));
  stranger = await writeTestPki(join(dir, "other"));
  const read = (file: string) => readFileSync(file);
  core = await startCore({
    mongoUri: inject("mongoUri"),
    databaseName,
    adminToken: ADMIN_TOKEN,
    tls: { cert: read(pki.certFile), key: read(pki.keyFile), ca: read(pki.caFile) },
  });
});
afterAll(async () => {
  await core?.mongo.db(databaseName).dropDatabase();
  await core?.stop(1_000);
  rmSync(dir, { recursive: true, force: true });
});

const adminWith = (channel: Parameters<typeof createClient>[2]) =>
  createClient(AdminService, core.address, { metadata: { authorization: `Bearer ${ADMIN_TOKEN}` }, timeoutMs: 3_000, ...channel });

async function listAccountsWith(channel: Parameters<typeof createClient>[2]) {
  const client = adminWith(channel);
  try {
    return await client.listAccounts({ limit: 1 });
  } finally {
    client.close();
  }
}

describe("core with CORE_TLS_* material", () => {
  it("serves a client that presents a certificate signed by its CA", async () => {
    await expect(listAccountsWith({ credentials: mutualTlsCredentials(pki) })).resolves.toMatchObject({ accounts: expect.any(Array) });
  });

  it("refuses plaintext, a client without a certificate and one whose certificate another CA signed", async () => {
    const unavailable = { code: "service_unavailable" };
    await expect(listAccountsWith({})).rejects.toMatchObject(unavailable);
    await expect(listAccountsWith({ credentials: credentials.createSsl(readFileSync(pki.caFile)) })).rejects.toMatchObject(unavailable);
    const wrongCa = { certFile: stranger.certFile, keyFile: stranger.keyFile, caFile: pki.caFile };
    await expect(listAccountsWith({ credentials: mutualTlsCredentials(wrongCa) })).rejects.toMatchObject(unavailable);
  });
});

describe("plaintext only on loopback", () => {
  const base = { MONGODB_URI: "mongodb://127.0.0.1:27017/", RMS_ADMIN_TOKEN: "0123456789abcdef" };

  it("refuses a non-loopback CORE_ADDR without the CORE_TLS_ files, with one line", async () => {
    for (const address of ["0.0.0.0:50051", "10.1.2.3:50051", "core.internal:50051"]) {
      expect(() => parseCoreConfig({ ...base, CORE_ADDR: address })).toThrow(
        new RegExp(
          `^CORE_ADDR ${address} is not a loopback address: set CORE_TLS_CERT_FILE, CORE_TLS_KEY_FILE and CORE_TLS_CA_FILE to serve gRPC over TLS with ` +
            `client certificates$`,
        ),
      );
    }
    await expect(startCore({ mongoUri: base.MONGODB_URI, databaseName: "x", adminToken: ADMIN_TOKEN, address: "0.0.0.0:0" })).rejects.toThrow(/non-loopback/);
  });

  it("accepts loopback addresses in plaintext and any address with all three files", () => {
    for (const address of ["127.0.0.1:50051", "localhost:50051", "127.0.0.2:1"]) expect(parseCoreConfig({ ...base, CORE_ADDR: address }).tls).toBeNull();
    const tls = parseCoreConfig({
      ...base,
      CORE_ADDR: "0.0.0.0:50051",
      CORE_TLS_CERT_FILE: "c.pem",
      CORE_TLS_KEY_FILE: "k.pem",
      CORE_TLS_CA_FILE: "ca.pem",
    }).tls;
    expect(tls).toEqual({ certFile: "c.pem", keyFile: "k.pem", caFile: "ca.pem" });
    expect(() => parseCoreConfig({ ...base, CORE_TLS_CERT_FILE: "c.pem" })).toThrow(/^CORE_TLS_KEY_FILE must be set together with the other CORE_TLS_ files$/);
  });

  it("wants a gateway token different from the admin token", () => {
    expect(() => parseCoreConfig({ ...base, RMS_GATEWAY_TOKEN: base.RMS_ADMIN_TOKEN })).toThrow(/^RMS_GATEWAY_TOKEN must differ from RMS_ADMIN_TOKEN/);
  });
});
