// A streamed upload whose core is SIGKILLed mid-stream, against the real processes and a real database.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as connectTls } from "node:tls";
import { testDatabaseName } from "@rms/test-db";
import { dropDatabase, eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient } from "mongodb";
import { afterAll, afterEach, describe, expect, inject, it } from "vitest";
import { freePort, httpsCall, newTestKey, startCoreProcess, startGatewayProcess } from "./processes.js";

const dataDir = mkdtempSync(join(tmpdir(), "rms-upload-crash-"));
const running: { stop(graceMs: number): Promise<void> }[] = [];
afterEach(async () => {
  for (const p of running.splice(0).reverse()) await p.stop(2_000);
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** A multipart body of one JSONL file (text only, so it travels as a string), as an SDK sends it. */
async function multipart(rows: string): Promise<{ body: string; type: string }> {
  const form = new FormData();
  form.append("purpose", "resources_import");
  form.append("file", new Blob([rows], { type: "application/x-ndjson" }), "crash.jsonl");
  const response = new Response(form);
  return { body: await response.text(), type: response.headers.get("content-type")! };
}

/** Sends the head and the first `bytes` of a request over TLS, and reads whatever answer comes until the connection closes. */
async function partialUpload(port: number, head: string, body: string, bytes: number) {
  const socket = connectTls({ host: "127.0.0.1", port, ca: readFileSync(join(dataDir, "tls", "cert.pem")), servername: "localhost" });
  await new Promise<void>((resolve, reject) => socket.once("secureConnect", resolve).once("error", reject));
  let answer = "";
  socket.on("data", (piece: Buffer) => (answer += piece.toString("utf8")));
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.write(head);
  socket.write(body.slice(0, bytes));
  return { answer: () => answer, closed, destroy: () => socket.destroy() };
}

/**
 * A database of its own (dropped after the test), core (with `faults`, if any) and the gateway as processes, and a
 * test account's key: the stack an upload test kills core in. `restartCore` starts core again on the same port.
 */
async function startUploadStack(name: string, faults?: string) {
  const mongoUri = inject("mongoUri");
  const databaseName = testDatabaseName(name);
  running.push({ stop: () => dropDatabase(mongoUri, databaseName) });
  const mongo = await new MongoClient(mongoUri).connect();
  running.push({ stop: () => mongo.close() });
  const corePort = await freePort();
  const coreAddr = `127.0.0.1:${corePort}`;
  const doomedCore = await startCoreProcess({ mongoUri, databaseName, port: corePort, faults });
  running.push(doomedCore);
  const gatewayPort = await freePort();
  running.push(await startGatewayProcess({ coreAddr, mongoUri, databaseName, dataDir, port: gatewayPort }));
  const { accountId, secret } = await newTestKey(coreAddr);
  return {
    db: mongo.db(databaseName),
    doomedCore,
    gatewayPort,
    accountId,
    secret,
    async restartCore() {
      running.push(await startCoreProcess({ mongoUri, databaseName, port: corePort }));
    },
  };
}

describe("a streamed upload when core dies", () => {
  it("kill -9 of core mid-upload: the client gets a clean error, a retry with the same key makes the one file, the dead attempt's bytes are " +
    "swept", async () => {
    const { db, doomedCore, gatewayPort, accountId, secret, restartCore } = await startUploadStack("upload-crash");

    // About 4 MiB of rows: four chunks of the byte store.
    const rows = Array.from({ length: 90_000 }, (_, i) => `{"name":"row ${i}","metadata":{"n":"${i}"}}\n`).join("");
    const { body, type } = await multipart(rows);
    const headers = { "content-type": type, "idempotency-key": "crash-upload-1" };
    const head =
      `POST /v1/files HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${secret}\r\nIdempotency-Key: crash-upload-1\r\nContent-Type: ` +
      `${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
    const first = await partialUpload(gatewayPort, head, body, 2_600_000);
    // Core has written chunks of this upload (and holds the key's lock) when it dies.
    await eventually(async () => expect(await db.collection("file_blob_chunks").countDocuments()).toBeGreaterThan(0), { timeoutMs: 30_000 });
    expect(await db.collection("idempotency_keys").countDocuments({ account: accountId, completed: false })).toBe(1);
    doomedCore.process.kill("SIGKILL");
    expect(await doomedCore.exited).toBe("SIGKILL");

    // The client is told, with a JSON error, and the connection closes: nothing hangs.
    await first.closed;
    const answered = first.answer();
    const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(answered)?.[1]);
    expect(status).toBeGreaterThanOrEqual(500);
    const error = JSON.parse(answered.slice(answered.indexOf("{"), answered.lastIndexOf("}") + 1)).error;
    expect(error.type).toBe("api_error");
    expect(await db.collection("files").countDocuments({ account: accountId })).toBe(0);

    await restartCore();
    const upload = () => httpsCall(dataDir, gatewayPort, "POST", "/v1/files", { key: secret, form: body, headers });
    // 5xx while the gateway reconnects, 409 while the dead attempt's lock lasts (30 s past its last bytes at most).
    let retry = await upload();
    const until = Date.now() + 120_000;
    while ((retry.status >= 500 || retry.status === 409) && Date.now() < until) {
      if (retry.status === 409) expect(JSON.parse(retry.body).error.code).toBe("idempotency_key_in_use");
      await new Promise((resolve) => setTimeout(resolve, 500));
      retry = await upload();
    }
    expect(retry.status).toBe(201);
    const file = JSON.parse(retry.body);
    expect(file).toMatchObject({ object: "file", size: Buffer.byteLength(rows), sha256: createHash("sha256").update(rows).digest("hex") });
    expect(retry.headers["idempotent-replayed"]).toBeUndefined();
    const again = await upload();
    expect(again.body).toBe(retry.body);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(await db.collection("files").countDocuments({ account: accountId })).toBe(1);

    // The dead attempt's blob is still open, its writing lease (10 minutes) not yet over: as if it were, core's own
    // sweep (a pass a minute) reclaims it. What stays is exactly the file's bytes.
    const orphans = await db.collection("file_blobs").find({ state: "open" }).toArray();
    expect(orphans.length).toBe(1);
    await db.collection("file_blobs").updateMany({ state: "open" }, { $set: { check_at: new Date(0) } });
    // A keyed file is named from its key and bytes, not from its blob: its blobs are the ones its document lists.
    const stored = await db.collection<{ _id: string; blobs: { id: string }[] }>("files").findOne({ _id: file.id });
    const kept = stored?.blobs.map((blob) => blob.id) ?? [];
    expect(kept).toHaveLength(1);
    await eventually(
      async () => {
        expect(await db.collection("file_blobs").countDocuments({ state: "open" })).toBe(0);
        expect(await db.collection("file_blob_chunks").countDocuments({ b: { $nin: kept } })).toBe(0);
      },
      { timeoutMs: 150_000, intervalMs: 1_000 },
    );
    expect(await db.collection("file_blobs").countDocuments()).toBe(1);
    expect(await db.collection("file_blob_chunks").countDocuments({ b: { $in: kept } })).toBe(4);
  }, 400_000);

  it("kill -9 of core right after the file's one commit (its document with the key's record), before answering: the retry with the same key answers " +
    "that same file", async () => {
    const { db, doomedCore, gatewayPort, accountId, secret, restartCore } = await startUploadStack("upload-crash-after", "file.create:1");

    const rows = Array.from({ length: 2_000 }, (_, i) => `{"name":"after ${i}"}\n`).join("");
    const { body, type } = await multipart(rows);
    const upload = () =>
      httpsCall(dataDir, gatewayPort, "POST", "/v1/files", { key: secret, form: body, headers: { "content-type": type, "idempotency-key": "crash-after-1" } });
    const first = await upload();
    expect(first.status).toBeGreaterThanOrEqual(500);
    expect(await doomedCore.exited).toBe("SIGKILL");
    // The file and the record of its answer committed together.
    expect(await db.collection("files").countDocuments({ account: accountId })).toBe(1);
    expect(await db.collection("idempotency_keys").countDocuments({ account: accountId, completed: true })).toBe(1);

    await restartCore();
    let retry = await upload();
    const until = Date.now() + 120_000;
    while ((retry.status >= 500 || retry.status === 409) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      retry = await upload();
    }
    expect(retry.status).toBe(201);
    const file = JSON.parse(retry.body);
    expect(file).toMatchObject({ object: "file", size: Buffer.byteLength(rows), sha256: createHash("sha256").update(rows).digest("hex") });
    expect(await db.collection("files").countDocuments({ account: accountId })).toBe(1);
    expect((await db.collection("files").findOne({ account: accountId }))?.["_id"]).toBe(file.id);
    expect(retry.headers["idempotent-replayed"]).toBe("true");
    const again = await upload();
    expect(again.body).toBe(retry.body);
    expect(again.headers["idempotent-replayed"]).toBe("true");
  }, 400_000);
});
