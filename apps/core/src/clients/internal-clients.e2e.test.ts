// Internal services calling a real core process (CONTRACT.md section 15, in ../shared/docs/) through @rms/client, with
// the caller table of a CORE_CLIENTS_FILE: what a client limited to two reads of one account in test mode gets,
// a keyed write made twice, a token rotated by SIGHUP, and what core's log and /metrics say of each client.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { createCoreClient, type CoreClient } from "@rms/client";
import { lintExposition } from "@rms/metrics-server";
import { keyHash } from "@rms/proto";
import { testDatabaseName } from "@rms/test-db";
import { eventually, installedTool, promtoolCheck, promtoolInstalled } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ADMIN_TOKEN } from "../testutil/harness.js";
import { startCoreProcess, type CoreProcess } from "../testutil/process.js";

const token = () => randomBytes(32).toString("hex");
const READER = token();
const WRITER = token();
const dir = mkdtempSync(join(tmpdir(), "rms-clients-"));
const clientsFile = join(dir, "clients.json");
const databaseName = testDatabaseName("core");

/** The accounts the operator made, filled in before the clients file names them. */
const accounts = { a: "", b: "" };

/** The clients file: the reader (its token hashes given, for a rotation), and a writer of account A's resources. */
function writeClients(readerHashes: readonly string[], text?: string): void {
  const clients = [
    {
      name: "billing",
      token_sha256: readerHashes,
      methods: ["rms.v1.ResourceService/GetResource", "rms.v1.ResourceService/ListResources"],
      accounts: [accounts.a],
      modes: ["test"],
    },
    { name: "importer", token_sha256: [keyHash(WRITER)], methods: ["rms.v1.ResourceService/*"], accounts: [accounts.a], modes: ["test"] },
  ];
  writeFileSync(clientsFile, text ?? JSON.stringify({ clients }));
}

let core: CoreProcess;
let mongo: MongoClient;
const opened: CoreClient[] = [];
const clientWith = (secret: string) => {
  const client = createCoreClient({ address: core.address, token: secret, deadlineMs: 5_000 });
  opened.push(client);
  return client;
};

/** Resources made by the operator: in A (test), in B (test) and in A (live). */
const made = { a: "", b: "", aLive: "" };

beforeAll(async () => {
  mongo = await MongoClient.connect(inject("mongoUri"));
  // The operator's table entry is built in: it makes the accounts before any file names them.
  const first = await startCoreProcess(databaseName);
  const bootstrap = createCoreClient({ address: first.address, token: ADMIN_TOKEN });
  for (const name of ["a", "b"] as const) accounts[name] = (await bootstrap.admin.createAccount({})).account!.id;
  const tenantA = { accountId: accounts.a, livemode: false };
  made.a = (await bootstrap.resources.createResource({ tenant: tenantA, name: "A's, test" })).resource!.id;
  await bootstrap.resources.createResource({ tenant: tenantA, name: "A's second, test" });
  made.b = (await bootstrap.resources.createResource({ tenant: { accountId: accounts.b, livemode: false }, name: "B's" })).resource!.id;
  made.aLive = (await bootstrap.resources.createResource({ tenant: { accountId: accounts.a, livemode: true }, name: "A's, live" })).resource!.id;
  bootstrap.close();
  await first.stop();
  writeClients([keyHash(READER)]);
  core = await startCoreProcess(databaseName, { CORE_CLIENTS_FILE: clientsFile });
});

afterAll(async () => {
  for (const client of opened) client.close();
  await core?.stop();
  await mongo?.db(databaseName).dropDatabase();
  await mongo?.close();
  rmSync(dir, { recursive: true, force: true });
});

const tenant = (account: string, livemode = false) => ({ accountId: account, livemode });
const notFound = { grpcCode: GrpcStatus.NOT_FOUND, code: "resource_missing" };

/** The fields of an error as a client sees them: equal for two answers that tell the same. */
async function refusal(call: Promise<unknown>): Promise<Record<string, unknown>> {
  const error = (await call.then(
    () => new Error("the call succeeded"),
    (e: unknown) => e,
  )) as Record<string, unknown>;
  return { grpcCode: error["grpcCode"], type: error["type"], code: error["code"], param: error["param"], message: error["message"] };
}

describe("a client limited to GetResource and ListResources of one account in test mode", () => {
  it("reads that account's resources", async () => {
    const billing = clientWith(READER);
    const { resources } = await billing.resources.listResources({ tenant: tenant(accounts.a), limit: 10 });
    expect(resources.map((r) => r.name).sort()).toEqual(["A's second, test", "A's, test"]);
    expect((await billing.resources.getResource({ tenant: tenant(accounts.a), id: made.a })).resource?.name).toBe("A's, test");
  });

  it("may not create: PERMISSION_DENIED (method_not_allowed), and nothing is made", async () => {
    const billing = clientWith(READER);
    await expect(billing.resources.createResource({ tenant: tenant(accounts.a), name: "sneaked in" })).rejects.toMatchObject({
      grpcCode: GrpcStatus.PERMISSION_DENIED,
      code: "method_not_allowed",
    });
    expect(await mongo.db(databaseName).collection("resources").countDocuments({ name: "sneaked in" })).toBe(0);
  });

  it("finds another account's resource NOT_FOUND, in the words core has for any object of another tenant", async () => {
    const billing = clientWith(READER);
    // Named under its own account: the ordinary answer for an object of another tenant.
    const foreign = await refusal(billing.resources.getResource({ tenant: tenant(accounts.a), id: made.b }));
    expect(foreign).toMatchObject(notFound);
    // Named under the other account, which the client may not act on: the same answer, word for word.
    expect(await refusal(billing.resources.getResource({ tenant: tenant(accounts.b), id: made.b }))).toEqual(foreign);
    // And for an id that exists nowhere, so the answer tells nothing of what exists.
    const nowhere = "res_0000000000000000000000";
    expect(await refusal(billing.resources.getResource({ tenant: tenant(accounts.b), id: nowhere }))).toEqual(
      await refusal(billing.resources.getResource({ tenant: tenant(accounts.a), id: nowhere })),
    );
    // A list of the other account names no object: NOT_FOUND for the account, existing or not.
    const listed = await refusal(billing.resources.listResources({ tenant: tenant(accounts.b), limit: 10 }));
    expect(listed).toMatchObject({ ...notFound, param: "tenant", message: `No such account: '${accounts.b}'` });
    expect(await refusal(billing.resources.listResources({ tenant: tenant("acct_0000000000000000000000"), limit: 10 }))).toMatchObject({
      ...notFound,
      param: "tenant",
    });
  });

  it("finds the live mode NOT_FOUND when it has only test", async () => {
    const billing = clientWith(READER);
    const live = await refusal(billing.resources.getResource({ tenant: tenant(accounts.a, true), id: made.aLive }));
    expect(live).toEqual(await refusal(billing.resources.getResource({ tenant: tenant(accounts.a), id: made.aLive })));
    expect(live).toMatchObject(notFound);
    await expect(billing.resources.listResources({ tenant: tenant(accounts.a, true), limit: 10 })).rejects.toMatchObject(notFound);
  });

  it("an unknown token is UNAUTHENTICATED", async () => {
    const stranger = clientWith(token());
    await expect(stranger.resources.listResources({ tenant: tenant(accounts.a), limit: 10 })).rejects.toMatchObject({ grpcCode: GrpcStatus.UNAUTHENTICATED });
  });
});

describe("a client allowed to write", () => {
  it("makes one resource and one event for a keyed CreateResource sent twice", async () => {
    const importer = clientWith(WRITER);
    const key = `import-${randomBytes(4).toString("hex")}`;
    const request = { tenant: tenant(accounts.a), name: "imported once" };
    const first = await importer.resources.createResource(request, { idempotencyKey: key });
    const again = await importer.resources.createResource(request, { idempotencyKey: key });
    expect(again.resource?.id).toBe(first.resource?.id);
    const db = mongo.db(databaseName);
    expect(await db.collection("resources").countDocuments({ name: "imported once" })).toBe(1);
    // The same event the public API's create emits, with the key it was made under; exactly one (the relay runs in core).
    await eventually(async () => expect(await db.collection("events").countDocuments({ "object.id": first.resource!.id })).toBe(1));
    const event = await db.collection("events").findOne({ "object.id": first.resource!.id });
    expect(event).toMatchObject({ type: "resource.created", request: { idempotency_key: key } });
    // Its writes are limited as its reads are: another account's tenant answers NOT_FOUND, nothing made there.
    await expect(importer.resources.createResource({ tenant: tenant(accounts.b), name: "elsewhere" })).rejects.toMatchObject(notFound);
    expect(await db.collection("resources").countDocuments({ name: "elsewhere" })).toBe(0);
  });
});

describe("core's log and /metrics", () => {
  it("name the client of every refusal", async () => {
    // Written asynchronously: the lines of the last calls may still be on their way.
    await eventually(() => {
      const refused = core.lines().filter((line) => line["msg"] === "call refused");
      expect(refused).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            client: "billing",
            method: "/rms.v1.ResourceService/CreateResource",
            refused: "method_not_allowed",
            code: GrpcStatus.PERMISSION_DENIED,
          }),
          expect.objectContaining({
            client: "billing",
            method: "/rms.v1.ResourceService/GetResource",
            refused: "tenant_not_allowed",
            code: GrpcStatus.NOT_FOUND,
          }),
          expect.objectContaining({ client: "billing", method: "/rms.v1.ResourceService/ListResources", refused: "tenant_not_allowed" }),
          expect.objectContaining({ client: "importer", method: "/rms.v1.ResourceService/CreateResource", refused: "tenant_not_allowed" }),
          expect.objectContaining({ client: "unknown", refused: "admin_token_invalid", code: GrpcStatus.UNAUTHENTICATED }),
        ]),
      );
    });
    // Every call's line names its client.
    const calls = core.lines().filter((line) => line["msg"] === "call" || line["msg"] === "call refused");
    expect(calls.length).toBeGreaterThan(10);
    expect(calls.filter((line) => typeof line["client"] !== "string")).toEqual([]);
  });

  it("count calls by client, in an exposition promtool accepts", async () => {
    const text = await (await fetch(`http://127.0.0.1:${core.metricsPort}/metrics`)).text();
    expect(text).toMatch(
      /grpc_server_handled_total\{grpc_type="unary",grpc_service="rms.v1.ResourceService",grpc_method="ListResources",client="billing",grpc_code="OK"\} [1-9]/,
    );
    expect(text).toMatch(/grpc_server_handled_total\{[^}]*grpc_method="CreateResource",client="billing",grpc_code="PERMISSION_DENIED"\} 1/);
    expect(text).toMatch(/grpc_server_handled_total\{[^}]*grpc_method="CreateResource",client="importer",grpc_code="OK"\} 2/);
    expect(text).toMatch(/grpc_server_started_total\{[^}]*client="unknown"\} [1-9]/);
    expect(lintExposition(text)).toEqual([]);
    if (!promtoolInstalled()) {
      console.log("promtool is not installed (PROMTOOL, the PATH or Go's bin directory): its check of /metrics is skipped");
      return;
    }
    const check = promtoolCheck(text);
    expect(check.status, check.output).toBe(0);
  });
});

/** grpcurl from GRPCURL, the PATH or Go's bin directory (`go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.1`). */
const GRPCURL = installedTool("grpcurl", "GRPCURL");

/** One grpcurl call with a bearer token; its exit status and what it printed. Asynchronous, as core is another process anyway. */
function grpcurl(secret: string, method: string, request: object): Promise<{ status: number | null; out: string }> {
  const child = spawn(GRPCURL!, ["-plaintext", "-H", `authorization: Bearer ${secret}`, "-d", JSON.stringify(request), core.address, method], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (piece: Buffer) => (out += piece.toString("utf8")));
  child.stderr.on("data", (piece: Buffer) => (out += piece.toString("utf8")));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (status) => resolve({ status, out }));
  });
}

describe.skipIf(!GRPCURL)("grpcurl with the client's token (skipped when grpcurl is not installed: GRPCURL=<path>, the PATH or ~/go/bin)", () => {
  it("shows the same answers", async () => {
    const read = await grpcurl(READER, "rms.v1.ResourceService/GetResource", { tenant: tenant(accounts.a), id: made.a });
    expect(read.status, read.out).toBe(0);
    expect(read.out).toContain("A's, test");
    const listed = await grpcurl(READER, "rms.v1.ResourceService/ListResources", { tenant: tenant(accounts.a), limit: 10 });
    expect(listed.out).toContain("A's second, test");
    const create = await grpcurl(READER, "rms.v1.ResourceService/CreateResource", { tenant: tenant(accounts.a), name: "by grpcurl" });
    expect(create.out).toMatch(/Code: PermissionDenied[\s\S]*method_not_allowed/);
    const other = await grpcurl(READER, "rms.v1.ResourceService/GetResource", { tenant: tenant(accounts.b), id: made.b });
    expect(other.out).toMatch(new RegExp(`Code: NotFound[\\s\\S]*No such resource: '${made.b}'`));
    const live = await grpcurl(READER, "rms.v1.ResourceService/GetResource", { tenant: tenant(accounts.a, true), id: made.aLive });
    expect(live.out).toMatch(/Code: NotFound/);
    const stranger = await grpcurl(token(), "rms.v1.ResourceService/ListResources", { tenant: tenant(accounts.a) });
    expect(stranger.out).toMatch(/Code: Unauthenticated/);
  });
});

describe("a token rotated by SIGHUP", () => {
  // Last: it changes the reader's entry.
  it("works throughout, two hashes then one, and the old one stops once core reads the file again", async () => {
    const NEW = token();
    const [old, fresh] = [clientWith(READER), clientWith(NEW)];
    const reads = (client: CoreClient) =>
      client.resources.listResources({ tenant: tenant(accounts.a), limit: 1 }).then(
        () => "ok" as const,
        (e: { code?: string }) => e.code ?? "failed",
      );
    const reloads = () => core.lines().filter((line) => line["msg"] === "clients file read").length;

    // Both hashes: the new token is taken once core has read the file again; the old one works all along.
    writeClients([keyHash(READER), keyHash(NEW)]);
    core.child.kill("SIGHUP");
    await eventually(async () => {
      expect(await reads(old)).toBe("ok");
      expect(await reads(fresh)).toBe("ok");
    });
    // The log is written asynchronously: the line may come after the call that shows the new table.
    await eventually(() => expect(reloads()).toBe(1));

    // A bad file is refused whole: the table stays as it was, the log says why.
    writeClients([], "{ not json");
    core.child.kill("SIGHUP");
    await eventually(() => expect(core.lines().some((line) => line["msg"] === "clients file refused" && /not JSON/.test(String(line["reason"])))).toBe(true));
    expect([await reads(old), await reads(fresh)]).toEqual(["ok", "ok"]);

    // Only the new hash: the old token stops, the new one goes on.
    writeClients([keyHash(NEW)]);
    core.child.kill("SIGHUP");
    await eventually(async () => expect(await reads(old)).toBe("admin_token_invalid"));
    expect(await reads(fresh)).toBe("ok");
    await eventually(() => expect(reloads()).toBe(2));
    // Core went on serving through all three signals.
    expect(core.child.exitCode).toBeNull();
  });
});
