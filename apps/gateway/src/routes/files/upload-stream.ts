import { status as GrpcStatus, type Metadata } from "@grpc/grpc-js";
import { CLIENT_STREAM_UNSENT_BYTES, RpcError } from "@rms/proto";
import { sendUnderKey } from "../../idempotency/index.js";
import type { StreamInput } from "../../engine/operation.js";

/**
 * Asks core whether a file may be uploaded (the account's quota), before a byte of its body is read and before
 * `100 Continue` (a multipart body names its file only once read): a refusal is then a plain answer. The question is
 * never kept under the request's Idempotency-Key; the key goes with it so that core admits a key that has a record
 * (its first answer is the one to give).
 */
export async function admitUpload(input: StreamInput): Promise<void> {
  try {
    await input.core.files.admitUpload({ tenant: input.tenant, idempotencyKey: input.key ?? "" }, { metadata: input.metadata });
  } catch (error) {
    // A core of an earlier release (during a rolling upgrade) has no such question; it checks at the upload's start.
    if (error instanceof RpcError && error.grpcCode === GrpcStatus.UNIMPLEMENTED) return;
    throw error;
  }
}

/** The JSON answer of a stream upload: status and object. */
export interface UploadAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/**
 * Runs an upload (a POST whose body streams to core) and sends its JSON answer, under the request's Idempotency-Key
 * as every POST (idempotency/keyed-call.ts): the fingerprint covers what is known at the stream's start (the start
 * message); core adds the bytes' sha256 and the end at the stream's end.
 */
export function sendUpload(
  input: StreamInput,
  rpc: string,
  start: unknown,
  upload: (call: { metadata: Readonly<Record<string, string>>; onTrailers: (trailers: Metadata) => void }) => Promise<UploadAnswer>,
): Promise<void> {
  const render = (answer: UploadAnswer) => ({ status: answer.status, text: JSON.stringify(answer.body) });
  return sendUnderKey(input.req, input.res, input.key, {
    metadata: input.metadata,
    rpc,
    message: start,
    call: (metadata, onTrailers) => upload({ metadata, onTrailers }),
    send: (answer) => {
      const { status, text } = render(answer);
      input.res.status(status).send(text);
    },
    render,
  });
}

/** Bytes per gRPC message of an upload: well under gRPC's default 4 MiB limit. */
export const UPLOAD_MESSAGE_BYTES = 256 * 1024;

/**
 * Bytes of a request body read from the socket that the gateway's stream parts hold before they reach `coalesce`:
 * the TLS socket's and the request's readable buffers, and busboy's (its writable and the file's readable), each at
 * most Node's default high-water mark of 64 KiB.
 */
const INTAKE_BYTES = 4 * 64 * 1024;
/** The HTTP/2 stream's flow-control window to core (Node's default, which grpc-js keeps): sent, not yet read. */
const HTTP2_WINDOW_BYTES = 64 * 1024;

/**
 * What one upload holds in the gateway at most, read from the client's socket and not yet read by core: the intake,
 * `coalesce`'s message being filled and the one it yielded, the messages not yet sent on the gRPC stream
 * (CLIENT_STREAM_UNSENT_BYTES), and the HTTP/2 window. A client faster than core is read only as fast as core reads.
 */
export const GATEWAY_UPLOAD_BYTES_HELD = INTAKE_BYTES + 2 * UPLOAD_MESSAGE_BYTES + CLIENT_STREAM_UNSENT_BYTES + HTTP2_WINDOW_BYTES;

/**
 * How long bytes wait in the gateway for more at most: a piece that arrives this long after the oldest one held is
 * sent with them at once. A slow client's bytes then reach core as they come (a message a second at most), and
 * core's keyed lock, renewed as data messages arrive, holds however slowly the upload moves.
 */
export const FLUSH_AFTER_MS = 1_000;

/**
 * Chunks of at most `bytes`, sent once `bytes` are held: fewer, larger gRPC messages. Bytes held for `flushAfterMs`
 * go with the next piece, whatever their size.
 */
export async function* coalesce(source: AsyncIterable<Uint8Array>, bytes: number, flushAfterMs = FLUSH_AFTER_MS, now = Date.now): AsyncGenerator<Uint8Array> {
  let pending: Buffer[] = [];
  let size = 0;
  let heldSince = 0;
  for await (const piece of source) {
    if (size === 0) heldSince = now();
    pending.push(Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength));
    size += piece.length;
    if (size >= bytes || (size > 0 && now() - heldSince >= flushAfterMs)) {
      const all = Buffer.concat(pending, size);
      for (let at = 0; at < all.length; at += bytes) yield all.subarray(at, at + bytes);
      pending = [];
      size = 0;
    }
  }
  if (size > 0) yield Buffer.concat(pending, size);
}
