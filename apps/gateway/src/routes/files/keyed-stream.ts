import { status as GrpcStatus, type Metadata } from "@grpc/grpc-js";
import { ANSWER_HEADERS_METADATA, IDEMPOTENCY_KEY_METADATA, REQUEST_FINGERPRINT_METADATA, RpcError, type IdempotentReplayTrailer } from "@rms/proto";
import type { Response } from "express";
import { answerHeaders, recordedHeaders, replayTrailerOf, requestFingerprint, sendRefusalReplay, sendReplay } from "../../idempotency/index.js";
import type { StreamInput } from "../operation.js";

/**
 * Asks core whether a file may be uploaded (the account's quota), before a byte of its body is read and before
 * `100 Continue` (a multipart body names its file only once read): a refusal is then a plain answer. The question is
 * never kept under the request's Idempotency-Key; the key goes with it so that core admits a key that has a record
 * (its first answer is the one to give).
 */
export async function admitUpload(input: StreamInput): Promise<void> {
  const { [IDEMPOTENCY_KEY_METADATA]: _key, ...metadata } = input.metadata;
  try {
    await input.core.files.admitUpload({ tenant: input.tenant, idempotencyKey: input.key ?? "" }, { metadata });
  } catch (error) {
    // A core of before has no such question; it checks at the upload's start.
    if (error instanceof RpcError && error.grpcCode === GrpcStatus.UNIMPLEMENTED) return;
    throw error;
  }
}

/** The JSON answer of a stream upload: status and object. */
export interface UploadAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** What an upload's core call gets: its metadata (with the key's, under an Idempotency-Key) and the trailers' reader. */
export interface UploadCall {
  readonly metadata: Readonly<Record<string, string>>;
  readonly onTrailers: (trailers: Metadata) => void;
}

/**
 * Runs an upload (a POST whose body streams to core) and sends its answer. Under an Idempotency-Key core decides,
 * as for every POST (docs/idempotency-and-limits.md, "One home"; core's `rpc.upload`): the call carries the key,
 * the fingerprint of what is known at the stream's start (method, path, RPC, the start message: core adds the bytes'
 * sha256 and the end at the stream's end) and the headers of the answer; a replay comes back marked with
 * `rms-replay`, and is sent as the first answer was, with `Idempotent-Replayed` and `Original-Request`.
 */
export async function sendUpload(input: StreamInput, rpc: string, start: unknown, upload: (call: UploadCall) => Promise<UploadAnswer>): Promise<void> {
  const { req, res, key } = input;
  let replay: IdempotentReplayTrailer | undefined;
  const onTrailers = (trailers: Metadata) => {
    replay = replayTrailerOf(trailers) ?? replay;
  };
  const metadata =
    key === undefined
      ? input.metadata
      : {
          ...input.metadata,
          [REQUEST_FINGERPRINT_METADATA]: requestFingerprint(req.method, req.path, rpc, start),
          [ANSWER_HEADERS_METADATA]: JSON.stringify(answerHeaders(res)),
        };
  let answer: UploadAnswer;
  try {
    answer = await upload({ metadata, onTrailers });
  } catch (error) {
    if (!replay) throw error;
    // The first answer was this refusal of core's: the same error body, under the first request's id. Core answered
    // it without reading the repeat's bytes (it was decided before the first stream ended): the rest of the body is
    // not read either, and the connection closes after the answer.
    if (!req.complete) res.setHeader("Connection", "close");
    return sendRefusalReplay(res, error, replay);
  }
  if (replay)
    return sendReplay(res, {
      status: answer.status,
      body: Buffer.from(JSON.stringify(answer.body), "utf8"),
      requestId: replay.requestId,
      headers: recordedHeaders(replay.headers),
    });
  sendAnswer(res, answer);
}

function sendAnswer(res: Response, answer: UploadAnswer): void {
  res.status(answer.status).send(JSON.stringify(answer.body));
}

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
