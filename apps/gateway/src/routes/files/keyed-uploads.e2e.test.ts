import { randomBytes } from "node:crypto";
import { Agent } from "node:https";
import { connect as connectTls } from "node:tls";
import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../../testutil/harness.js";

// Uploads under an Idempotency-Key go through core's one key protocol (rpc.upload) like every other POST: the
// replay is marked, a repeat sent while the first streams is 409, other bytes under the key are 400.
let stack: Stack;
let key: string;
let mongo: MongoClient;
beforeAll(async () => {
  stack = await startStack();
  ({ key } = await withSecretKey(stack));
  mongo = await new MongoClient(stack.mongoUri).connect();
});
afterAll(async () => {
  await mongo?.close();
  await stack?.stop();
});

const db = () => mongo.db(stack.databaseName);
const rows = (n: number, tag = "") => Buffer.from(Array.from({ length: n }, (_, i) => `{"name":"row ${tag}${i}"}\n`).join(""));

async function multipart(bytes: Buffer, filename: string): Promise<{ body: Buffer; type: string }> {
  const form = new FormData();
  form.append("purpose", "resources_import");
  form.append("file", new Blob([bytes], { type: "application/octet-stream" }), filename);
  const response = new Response(form);
  return { body: Buffer.from(await response.arrayBuffer()), type: response.headers.get("content-type")! };
}

async function upload(bytes: Buffer, filename: string, idempotencyKey: string) {
  const { body, type } = await multipart(bytes, filename);
  return stack.api.post("/v1/files", { key, body, headers: { "content-type": type, "idempotency-key": idempotencyKey } });
}

describe("POST /v1/files under an Idempotency-Key", () => {
  it("the repeat is the first answer byte for byte with Idempotent-Replayed and Original-Request; other bytes are 400 reused", async () => {
    const bytes = rows(200);
    const first = await upload(bytes, "keyed.jsonl", "file-key-1");
    expect(first.status).toBe(201);
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    const again = await upload(bytes, "keyed.jsonl", "file-key-1");
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.headers["original-request"]).toBe(first.headers["request-id"]);
    const other = await upload(rows(200, "x"), "keyed.jsonl", "file-key-1");
    expect(other.status).toBe(400);
    expect(other.json.error).toMatchObject({ type: "idempotency_error", code: "idempotency_key_reused" });
    const otherName = await upload(bytes, "renamed.jsonl", "file-key-1");
    expect(otherName.json.error.code).toBe("idempotency_key_reused");
    // The key of a resource create is another request too.
    const resource = await stack.api.post("/v1/resources", { key, form: { name: "r" }, headers: { "idempotency-key": "file-key-1" } });
    expect(resource.json.error.code).toBe("idempotency_key_reused");
    expect(await db().collection("files").countDocuments({ filename: "keyed.jsonl" })).toBe(1);
  });

  it("a repeat sent while the first is still streaming is 409 idempotency_key_in_use; the first then answers, and its repeat replays it", async () => {
    const bytes = rows(30_000);
    const { body, type } = await multipart(bytes, "slow.jsonl");
    const socket = connectTls({ host: "127.0.0.1", port: stack.gateway.httpsPort, ca: stack.gateway.certificate, servername: "localhost" });
    await new Promise<void>((resolve, reject) => socket.once("secureConnect", resolve).once("error", reject));
    let answer = "";
    socket.on("data", (piece: Buffer) => (answer += piece.toString("latin1")));
    socket.write(
      `POST /v1/files HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nIdempotency-Key: file-slow\r\nContent-Type: ` +
        `${type}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`,
    );
    socket.write(body.subarray(0, 1000));
    // Core took the key's lock when the stream started.
    await eventually(async () =>
      expect(
        await db()
          .collection("idempotency_keys")
          .countDocuments({ _id: { $regex: "/file-slow$" } } as never),
      ).toBe(1),
    );
    const meanwhile = await upload(bytes, "slow.jsonl", "file-slow");
    expect(meanwhile.status).toBe(409);
    expect(meanwhile.json.error).toMatchObject({ code: "idempotency_key_in_use" });
    // The rest of the body; the gateway closes the connection after its answer (Connection: close).
    socket.write(body.subarray(1000));
    await new Promise<void>((resolve) => socket.once("close", () => resolve()));
    expect(answer).toMatch(/^HTTP\/1\.1 201 /);
    const firstBody = answer.slice(answer.indexOf("\r\n\r\n") + 4);
    const after = await upload(bytes, "slow.jsonl", "file-slow");
    expect(after.status).toBe(201);
    expect(after.headers["idempotent-replayed"]).toBe("true");
    expect(after.json.id).toBe(JSON.parse(firstBody.slice(firstBody.indexOf("{"), firstBody.lastIndexOf("}") + 1)).id);
  });

  it("stripe-node retries files.create with its idempotencyKey: one file, the second answer the first", async () => {
    const stripe = new Stripe(key, {
      host: "127.0.0.1",
      port: stack.gateway.httpsPort,
      protocol: "https",
      httpAgent: new Agent({ ca: stack.gateway.certificate }),
    });
    const bytes = rows(40);
    const file = { data: bytes, name: "sdk-keyed.jsonl", type: "application/octet-stream" };
    const first = await stripe.files.create({ purpose: "resources_import" as never, file }, { idempotencyKey: "sdk-file-1" });
    const again = await stripe.files.create({ purpose: "resources_import" as never, file }, { idempotencyKey: "sdk-file-1" });
    expect(again.id).toBe(first.id);
    expect(first.lastResponse.headers["idempotent-replayed"]).toBeUndefined();
    expect(again.lastResponse.headers["idempotent-replayed"]).toBe("true");
    expect(again.lastResponse.headers["original-request"]).toBe(first.lastResponse.requestId);
    await expect(
      stripe.files.create({ purpose: "resources_import" as never, file: { ...file, data: rows(41) } }, { idempotencyKey: "sdk-file-1" }),
    ).rejects.toMatchObject({
      statusCode: 400,
      code: "idempotency_key_reused",
    });
    expect(await db().collection("files").countDocuments({ filename: "sdk-keyed.jsonl" })).toBe(1);
  });
});

describe("POST /v1/uploads/{id}/parts under an Idempotency-Key", () => {
  it(
    "a part sent again under its key is the first part (replayed), not another; other bytes are 400 reused; without a key the same bytes are the same " +
      "part",
    async () => {
      const created = await stack.api.post("/v1/uploads", {
        key,
        form: { purpose: "resources_import", filename: "parts.jsonl", bytes: "1000", type: "jsonl" },
      });
      const upl = created.json.id as string;
      const send = (bytes: Buffer, idempotencyKey?: string) =>
        stack.api.post(`/v1/uploads/${upl}/parts`, {
          key,
          body: bytes,
          headers: { "content-type": "application/octet-stream", ...(idempotencyKey ? { "idempotency-key": idempotencyKey } : {}) },
        });
      const bytes = randomBytes(500);
      const first = await send(bytes, "part-key-1");
      expect(first.status).toBe(201);
      const again = await send(bytes, "part-key-1");
      expect(again.text).toBe(first.text);
      expect(again.headers["idempotent-replayed"]).toBe("true");
      expect(again.headers["original-request"]).toBe(first.headers["request-id"]);
      const other = await send(randomBytes(500), "part-key-1");
      expect(other.status).toBe(400);
      expect(other.json.error.code).toBe("idempotency_key_reused");
      // Without a key, the same bytes are the same part too (a part is its bytes: docs/files.md, "Parts"); other bytes another.
      const unkeyed = await send(bytes);
      expect(unkeyed.json.id).toBe(first.json.id);
      expect(unkeyed.headers["idempotent-replayed"]).toBeUndefined();
      expect((await send(randomBytes(500))).json.id).not.toBe(first.json.id);
      expect(await db().collection("upload_parts").countDocuments({ upload: upl })).toBe(2);
      // A refusal of core (this upload does not exist) is replayed as it was.
      const missing = await stack.api.post("/v1/uploads/upl_0000000000000000000000/parts", {
        key,
        body: bytes,
        headers: { "content-type": "application/octet-stream", "idempotency-key": "part-missing" },
      });
      expect(missing.status).toBe(404);
      const missingAgain = await stack.api.post("/v1/uploads/upl_0000000000000000000000/parts", {
        key,
        body: bytes,
        headers: { "content-type": "application/octet-stream", "idempotency-key": "part-missing" },
      });
      expect(missingAgain.text).toBe(missing.text);
      expect(missingAgain.headers["idempotent-replayed"]).toBe("true");
    },
  );
});
