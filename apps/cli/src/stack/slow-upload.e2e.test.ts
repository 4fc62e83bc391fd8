// A slow upload against the real processes and a real database, with the writing lease and the sweep shortened by
// their settings (FILES_WRITE_LEASE_MS, FILES_SWEEP_INTERVAL_MS): a file answered 201 is readable in full.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as connectTls } from "node:tls";
import { testDatabaseName } from "@rms/test-db";
import { dropDatabase, eventually } from "@rms/test-db/testkit";
import type {} from "@rms/test-db/vitest-setup";
import { afterAll, afterEach, describe, expect, inject, it } from "vitest";
import { freePort, httpsCall, newTestKey, startCoreProcess, startGatewayProcess, startWorkerProcess } from "./processes.js";

const dataDir = mkdtempSync(join(tmpdir(), "rms-slow-upload-"));
const running: { stop(graceMs: number): Promise<void> }[] = [];
afterEach(async () => {
  for (const p of running.splice(0).reverse()) await p.stop(2_000);
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** A lease of 2 s, a sweep every 250 ms: an upload that lasts four leases would lose its first chunk to a lease renewed only per chunk. */
const SETTINGS = { FILES_WRITE_LEASE_MS: "2000", FILES_SWEEP_INTERVAL_MS: "250" };
/** The slow client: this many bytes every TRICKLE_GAP_MS (never idle near the gateway's 30 s idle cut), for about 8 s. */
const TRICKLE_BYTES = 3;
const TRICKLE_GAP_MS = 500;
const TRICKLE_PIECES = 16;

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** About 1.5 MiB of import rows: more than one chunk of the byte store (1 MiB), so its first chunk is written early. */
function importRows(prefix: string): Buffer {
  return Buffer.from(Array.from({ length: 33_000 }, (_, i) => `{"name":"${prefix} ${i}","metadata":{"n":"${i}"}}\n`).join(""));
}

async function multipart(rows: Buffer): Promise<{ body: Buffer; type: string }> {
  const form = new FormData();
  form.append("purpose", "resources_import");
  form.append("file", new Blob([rows], { type: "application/x-ndjson" }), "slow.jsonl");
  const response = new Response(form);
  return { body: Buffer.from(await response.arrayBuffer()), type: response.headers.get("content-type")! };
}

/**
 * Sends a request over TLS as a slow client does: the head and all of the body but its last bytes at once, then
 * those TRICKLE_BYTES at a time, TRICKLE_GAP_MS apart. Answers the status and the JSON body once the server closes.
 */
async function slowRequest(port: number, head: string, body: Buffer): Promise<{ status: number; json: Record<string, unknown> }> {
  const socket = connectTls({ host: "127.0.0.1", port, ca: readFileSync(join(dataDir, "tls", "cert.pem")), servername: "localhost" });
  await new Promise<void>((resolve, reject) => socket.once("secureConnect", resolve).once("error", reject));
  let answer = "";
  socket.on("data", (piece: Buffer) => (answer += piece.toString("utf8")));
  const closed = new Promise<void>((resolve, reject) => socket.once("close", () => resolve()).once("error", reject));
  const tail = TRICKLE_BYTES * TRICKLE_PIECES;
  socket.write(head);
  socket.write(body.subarray(0, body.length - tail));
  for (let at = body.length - tail; at < body.length; at += TRICKLE_BYTES) {
    await new Promise((resolve) => setTimeout(resolve, TRICKLE_GAP_MS));
    socket.write(body.subarray(at, at + TRICKLE_BYTES));
  }
  await closed;
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
  return { status, json: JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) };
}

async function startSlowStack(name: string) {
  const mongoUri = inject("mongoUri");
  const databaseName = testDatabaseName(name);
  running.push({ stop: () => dropDatabase(mongoUri, databaseName) });
  const corePort = await freePort();
  const coreAddr = `127.0.0.1:${corePort}`;
  running.push(await startCoreProcess({ mongoUri, databaseName, port: corePort, env: SETTINGS }));
  running.push(startWorkerProcess({ mongoUri, databaseName, env: SETTINGS }));
  const gatewayPort = await freePort();
  running.push(await startGatewayProcess({ coreAddr, mongoUri, databaseName, dataDir, port: gatewayPort }));
  const { secret } = await newTestKey(coreAddr);
  const call = (method: string, path: string, form?: string) =>
    httpsCall(dataDir, gatewayPort, method, path, { key: secret, ...(form === undefined ? {} : { form }) });
  return { gatewayPort, secret, call };
}

/** The file's contents read back whole, and an import of it run to its end. */
async function readAndImport(call: Awaited<ReturnType<typeof startSlowStack>>["call"], fileId: string, rows: Buffer) {
  const contents = await call("GET", `/v1/files/${fileId}/contents`);
  expect(contents.status).toBe(200);
  expect(contents.headers["content-length"]).toBe(String(rows.length));
  expect(sha256(Buffer.from(contents.body, "utf8"))).toBe(sha256(rows));
  const created = await call("POST", "/v1/jobs", `type=resources.import&params[file]=${fileId}`);
  expect(created.status).toBe(201);
  const jobId = JSON.parse(created.body).id as string;
  let job: Record<string, unknown> = {};
  await eventually(
    async () => {
      job = JSON.parse((await call("GET", `/v1/jobs/${jobId}`)).body);
      expect(["succeeded", "failed", "canceled"]).toContain(job["status"]);
    },
    { timeoutMs: 240_000, intervalMs: 500 },
  );
  expect(job).toMatchObject({ status: "succeeded", result: { created: rows.toString().split("\n").length - 1 } });
}

describe("a slow upload, with the writing lease and the sweep shortened by their settings", () => {
  it("POST /v1/files: a client sending a few bytes every half second for four leases gets 201, then the whole contents back, and an import of it " +
    "succeeds", async () => {
    const { gatewayPort, secret, call } = await startSlowStack("slow-upload-file");
    const rows = importRows("slow");
    const { body, type } = await multipart(rows);
    const head =
      `POST /v1/files HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${secret}\r\nContent-Type: ${type}\r\nContent-Length: ` +
      `${body.length}\r\nConnection: close\r\n\r\n`;
    const started = Date.now();
    const answer = await slowRequest(gatewayPort, head, body);
    console.log(`slow upload: ${rows.length} bytes in ${Date.now() - started} ms (lease 2 s, sweep every 250 ms)`);
    expect(answer.status).toBe(201);
    expect(answer.json).toMatchObject({ object: "file", size: rows.length, sha256: sha256(rows) });
    await readAndImport(call, answer.json["id"] as string, rows);
  }, 400_000);

  it("POST /v1/uploads/{id}/parts takes the same path: a slow part, then a fast one, complete, read back in full and imported", async () => {
    const { gatewayPort, secret, call } = await startSlowStack("slow-upload-parts");
    const rows = importRows("part");
    const cut = rows.length - 1000;
    const pieces = [rows.subarray(0, cut), rows.subarray(cut)];
    const upload = JSON.parse((await call("POST", "/v1/uploads", `purpose=resources_import&filename=slow.jsonl&type=jsonl&bytes=${rows.length}`)).body);
    const head =
      `POST /v1/uploads/${upload.id}/parts HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${secret}\r\nContent-Type: ` +
      `application/octet-stream\r\nContent-Length: ${pieces[0]!.length}\r\nConnection: close\r\n\r\n`;
    const slow = await slowRequest(gatewayPort, head, pieces[0]!);
    expect(slow.status).toBe(201);
    expect(slow.json).toMatchObject({ object: "upload.part", size: pieces[0]!.length, sha256: sha256(pieces[0]!) });
    const fast = await httpsCall(dataDir, gatewayPort, "POST", `/v1/uploads/${upload.id}/parts`, {
      key: secret,
      form: pieces[1]!.toString("utf8"),
      headers: { "content-type": "application/octet-stream" },
    });
    expect(fast.status).toBe(201);
    const completed = await call("POST", `/v1/uploads/${upload.id}/complete`, `part_ids[]=${slow.json["id"]}&part_ids[]=${JSON.parse(fast.body).id}`);
    expect(completed.status).toBe(200);
    const file = JSON.parse(completed.body).file;
    expect(file).toMatchObject({ size: rows.length, sha256: sha256(rows) });
    await readAndImport(call, file.id, rows);
  }, 400_000);
});
