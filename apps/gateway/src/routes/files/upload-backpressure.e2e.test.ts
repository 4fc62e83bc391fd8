import { createHash, randomBytes } from "node:crypto";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import type { IncomingMessage } from "node:http";
import { request } from "node:https";
import type { Socket } from "node:net";
import { STREAMED_WRITE_BYTES_HELD } from "@rms/core";
import { CLIENT_STREAM_READ_AHEAD } from "@rms/proto";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";
import { databaseRelay } from "../../testutil/relay.js";
import { GATEWAY_UPLOAD_BYTES_HELD, UPLOAD_MESSAGE_BYTES } from "./upload-stream.js";

/**
 * What an upload holds between the client's socket and MongoDB at most: the gateway's hop, then core's (the message
 * its handler holds and those read ahead, and its chunk writes in flight).
 */
const BOUND = GATEWAY_UPLOAD_BYTES_HELD + (CLIENT_STREAM_READ_AHEAD + 1) * UPLOAD_MESSAGE_BYTES + STREAMED_WRITE_BYTES_HELD;
const PIECE = randomBytes(1024 * 1024);
/** The file (whole pieces): many times the bound, so that a hop without backpressure would take in far more than it. */
const FILE_BYTES = Math.ceil((8 * BOUND) / PIECE.length) * PIECE.length;

let relay: Awaited<ReturnType<typeof databaseRelay>>;
let stack: Stack;
let key: string;
let mongo: MongoClient;
beforeAll(async () => {
  relay = await databaseRelay();
  // Core reaches the database through the relay, which can hold its chunk writes back; the gateway's records do not.
  stack = await startStack({ coreMongoUri: relay.uri, gateway: { filesMaxBytes: 2 * FILE_BYTES } });
  ({ key } = await withSecretKey(stack));
  mongo = await new MongoClient(stack.mongoUri).connect();
});
afterAll(async () => {
  relay?.releaseHeld();
  await mongo?.close();
  await stack?.stop();
  await relay?.close();
});

/** The bytes of file chunks MongoDB has acknowledged (read straight from the database, not through the relay). */
async function durableBytes(): Promise<number> {
  const [sum] = await mongo
    .db(stack.databaseName)
    .collection("file_blob_chunks")
    .aggregate<{ bytes: number }>([{ $group: { _id: null, bytes: { $sum: { $binarySize: "$data" } } } }])
    .toArray();
  return sum?.bytes ?? 0;
}

/** POST /v1/files of FILE_BYTES streamed as fast as the gateway takes them; its status and the file. */
function upload(port: number, ca: string) {
  const boundary = "----rms-backpressure";
  const hash = createHash("sha256");
  const answer = new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: "/v1/files",
        method: "POST",
        ca,
        agent: false,
        headers: { authorization: `Bearer ${key}`, "content-type": `multipart/form-data; boundary=${boundary}` },
      },
      (res: IncomingMessage) => {
        let text = "";
        res.on("data", (piece) => (text += piece));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    const write = (bytes: string | Buffer) => (req.write(bytes) ? Promise.resolve() : new Promise<void>((drained) => req.once("drain", drained)));
    (async () => {
      await write(`--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nresources_import\r\n`);
      await write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\nContent-Type: application/x-ndjson\r\n\r\n`);
      for (let sent = 0; sent < FILE_BYTES; sent += PIECE.length) {
        hash.update(PIECE);
        await write(PIECE);
      }
      req.end(`\r\n--${boundary}--\r\n`);
    })().catch(reject);
  });
  return { answer, sha256: () => hash.digest("hex") };
}

it("holds at most the hops' bound between the client's socket and MongoDB while the chunk writes are held back, then stores the whole file", async () => {
  // The socket of the upload's request, as the gateway reads it: its bytesRead is what the gateway took in.
  let socket: Socket | undefined;
  const onRequest = (message: unknown) => {
    const { request: req } = message as { request: IncomingMessage };
    if (req.url === "/v1/files") socket = req.socket;
  };
  subscribe("http.server.request.start", onRequest);
  relay.holdRequestsWith("file_blob_chunks");
  const sent = upload(stack.gateway.httpsPort, stack.gateway.certificate);
  try {
    // The gateway reads until its hops are full; then nothing moves while the writes are held. Settled once its
    // count stays the same over 20 looks (a pause, never a bound: a count still moving only makes the look later).
    let read = 0;
    for (let still = 0; still < 20 && read <= 2 * BOUND; ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const now = socket?.bytesRead ?? 0;
      still = now === read && now > 0 ? still + 1 : 0;
      read = now;
    }
    const durable = await durableBytes();
    console.log(`bytes read by the gateway ${read}, acknowledged by MongoDB ${durable}, in flight ${read - durable} (bound ${BOUND}, file ${FILE_BYTES})`);
    expect(read).toBeGreaterThan(0);
    expect(read - durable).toBeLessThanOrEqual(BOUND);
  } finally {
    relay.holdRequestsWith(undefined);
    relay.releaseHeld();
    unsubscribe("http.server.request.start", onRequest);
  }
  const { status, body } = await sent.answer;
  expect({ status, body }).toMatchObject({ status: 201 });
  expect(body).toMatchObject({ size: FILE_BYTES, sha256: sent.sha256() });
  expect(await durableBytes()).toBe(FILE_BYTES);
}, 120_000);
