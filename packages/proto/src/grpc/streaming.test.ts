import { Server, ServerCredentials, status as GrpcStatus } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileService, RpcError, addService, createClient, type ServiceImplementation } from "../index.js";

// A hand-written FileService with one client-streaming (UploadFile) and one server-streaming (ReadFile) method:
// this spec tests the adapter's streaming, not core.
const seen: { uploads: { bytes: number; messages: number; ended: boolean; failed?: string }[]; readsStopped: number } = { uploads: [], readsStopped: 0 };
const unary = async () => ({});
const implementation = {
  async uploadFile(
    requests: AsyncIterable<{ part: { case: string; value: { filename?: string; length: number } } }>,
    context: { metadata: { get(key: string): unknown[] }; setTrailer?: (key: string, value: string) => void; sendHeaders?: () => void },
  ) {
    // A trailer the handler sets (an Idempotency-Key replay's `rms-replay`) goes with its answer or its error.
    const trailer = context.metadata.get("test-trailer")[0];
    if (typeof trailer === "string") context.setTrailer?.("test-echo", trailer);
    let bytes = 0;
    let messages = 0;
    let filename = "";
    let ended = false;
    try {
      for await (const request of requests) {
        messages++;
        if (request.part.case === "start") filename = request.part.value.filename ?? "";
        // A start it accepts: the go-ahead for the bytes; one it refuses: the answer, before any byte.
        if (request.part.case === "start" && filename === "refuse-start")
          throw new RpcError(GrpcStatus.INVALID_ARGUMENT, { type: "invalid_request_error", code: "limit_exceeded", message: "refused at the start" });
        if (request.part.case === "start" && filename.startsWith("ask")) context.sendHeaders?.();
        if (request.part.case === "data") bytes += request.part.value.length;
        if (request.part.case === "end") ended = true;
        if (filename === "refuse" && bytes > 0)
          throw new RpcError(GrpcStatus.INVALID_ARGUMENT, { type: "invalid_request_error", code: "parameter_invalid", message: "refused" });
      }
    } catch (error) {
      seen.uploads.push({ bytes, messages, ended, failed: error instanceof Error ? error.message : String(error) });
      throw error;
    }
    seen.uploads.push({ bytes, messages, ended });
    return { file: { id: "file_x", size: BigInt(bytes), filename: `${filename}:${context.metadata.get("rms-request-id")[0] ?? ""}` } };
  },
  async *readFile(request: { id: string; start: bigint; end?: bigint }) {
    if (request.id === "missing")
      throw new RpcError(GrpcStatus.NOT_FOUND, { type: "invalid_request_error", code: "resource_missing", message: "No such file" });
    yield { part: { case: "head", value: { start: request.start, end: request.end ?? 0n } } };
    try {
      for (let i = 0; i < 1000; i++) yield { part: { case: "data", value: Buffer.alloc(64 * 1024, i % 256) } };
    } finally {
      seen.readsStopped++;
    }
  },
  getFile: unary,
  listFiles: unary,
  deleteFile: unary,
  createUpload: unary,
  getUpload: unary,
  uploadPart: unary,
  completeUpload: unary,
  cancelUpload: unary,
  admitUpload: unary,
} as unknown as ServiceImplementation<typeof FileService>;

let server: Server;
let address: string;
beforeAll(async () => {
  server = new Server();
  addService(server, FileService, implementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  address = `127.0.0.1:${port}`;
});
afterAll(() => server.forceShutdown());

async function* upload(filename: string, pieces: number, fail?: Error) {
  yield { part: { case: "start" as const, value: { filename } } };
  for (let i = 0; i < pieces; i++) yield { part: { case: "data" as const, value: new Uint8Array(1024 * 1024) } };
  if (fail) {
    // The server has the call and its messages before the source fails.
    await new Promise((resolve) => setTimeout(resolve, 300));
    throw fail;
  }
  yield { part: { case: "end" as const, value: { size: BigInt(pieces * 1024 * 1024) } } };
}

describe("streaming methods", () => {
  it("client streaming: many 1 MiB messages under the default 4 MiB limit, answered once; the server's error reaches the caller", async () => {
    const client = createClient(FileService, address);
    const reply = await client.uploadFile(upload("a.jsonl", 40), { metadata: { "rms-request-id": "req_1" } });
    expect(reply.file).toMatchObject({ id: "file_x", size: 40n * 1024n * 1024n, filename: "a.jsonl:req_1" });
    await expect(client.uploadFile(upload("refuse", 3))).rejects.toMatchObject({ code: "parameter_invalid", grpcCode: GrpcStatus.INVALID_ARGUMENT });
    client.close();
  });

  it("client streaming: the handler's trailers reach the caller's onTrailers, with the answer and with an error", async () => {
    const client = createClient(FileService, address);
    const echoed: unknown[] = [];
    const onTrailers = (trailers: { get(key: string): unknown[] }) => echoed.push(trailers.get("test-echo")[0]);
    await client.uploadFile(upload("a.jsonl", 1), { metadata: { "test-trailer": "with-answer" }, onTrailers });
    await expect(client.uploadFile(upload("refuse", 1), { metadata: { "test-trailer": "with-error" }, onTrailers })).rejects.toMatchObject({
      code: "parameter_invalid",
    });
    await client.uploadFile(upload("b.jsonl", 1), { onTrailers });
    expect(echoed).toEqual(["with-answer", "with-error", undefined]);
    client.close();
  });

  it(
    "client streaming: the handler's sendHeaders reaches the caller's onHeaders before the answer, so a caller may hold its messages back until " +
      "asked; a refusal of the start comes without it",
    async () => {
      const client = createClient(FileService, address);
      let asked!: () => void;
      const go = new Promise<void>((resolve) => (asked = resolve));
      let headers = 0;
      async function* heldBack(filename: string) {
        yield { part: { case: "start" as const, value: { filename } } };
        await go;
        yield { part: { case: "data" as const, value: new Uint8Array(10) } };
        yield { part: { case: "end" as const, value: { size: 10n } } };
      }
      const reply = await client.uploadFile(heldBack("ask.jsonl"), {
        onHeaders: () => {
          headers++;
          asked();
        },
      });
      expect(reply.file).toMatchObject({ size: 10n });
      expect(headers).toBe(1);
      await expect(client.uploadFile(heldBack("refuse-start"), { onHeaders: () => headers++ })).rejects.toMatchObject({ code: "limit_exceeded" });
      expect(headers).toBe(1);
      client.close();
    },
  );

  it(
    "client streaming: a source that fails cancels the call; the server never sees the stream's own end message (grpc-js may half-close first); the " +
      "caller gets the source's error",
    async () => {
      const client = createClient(FileService, address);
      const before = seen.uploads.length;
      await expect(client.uploadFile(upload("cut", 5, new Error("client went away")))).rejects.toThrow("client went away");
      await new Promise((resolve) => setTimeout(resolve, 500));
      const last = seen.uploads.slice(before);
      expect(last).toHaveLength(1);
      expect(last[0]?.ended).toBe(false);
      client.close();
    },
  );

  it(
    "server streaming: messages as an async iterable; leaving the loop early " + "cancels the call and stops the server's generator; errors are RpcErrors",
    async () => {
      const client = createClient(FileService, address);
      let count = 0;
      let head: unknown;
      for await (const message of client.readFile({ id: "f", start: 5n, end: 10n })) {
        if (message.part.case === "head") head = message.part.value;
        else count++;
      }
      expect(head).toMatchObject({ start: 5n, end: 10n });
      expect(count).toBe(1000);
      const stoppedBefore = seen.readsStopped;
      let taken = 0;
      for await (const _ of client.readFile({ id: "f" })) if (++taken === 3) break;
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(seen.readsStopped).toBe(stoppedBefore + 1);
      await expect(
        (async () => {
          for await (const _ of client.readFile({ id: "missing" })) void _;
        })(),
      ).rejects.toMatchObject({ code: "resource_missing" });
      client.close();
    },
  );
});
