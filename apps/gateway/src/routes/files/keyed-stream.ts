import { createHash } from "node:crypto";
import type { Response } from "express";

/** The JSON answer of a stream upload: status and object. */
export interface UploadAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/**
 * Runs an upload (a POST whose body streams to core) and sends its answer. Under an Idempotency-Key, core decides
 * (docs/idempotency-and-limits.md, "One home"; docs/files.md): it binds the key to the file it makes, so a repeat
 * with the same bytes and fields answers the first file, other bytes `idempotency_key_reused`. The gateway keeps
 * no record of its own for a streamed body, whose fingerprint is not known before its bytes have streamed.
 */
export async function sendUpload(res: Response, upload: () => Promise<UploadAnswer>): Promise<void> {
  const answer = await upload();
  res.status(answer.status).send(JSON.stringify(answer.body));
}

/** The SHA-256 and size of a byte stream, read to its end and kept nowhere. */
export async function hashStream(source: AsyncIterable<Uint8Array>): Promise<{ sha256: string; size: number }> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const piece of source) {
    hash.update(piece);
    size += piece.length;
  }
  return { sha256: hash.digest("hex"), size };
}

/** Chunks of at least `bytes` (but the last), at most `bytes` plus one piece: fewer, larger gRPC messages. */
export async function* coalesce(source: AsyncIterable<Uint8Array>, bytes: number): AsyncGenerator<Uint8Array> {
  let pending: Buffer[] = [];
  let size = 0;
  for await (const piece of source) {
    pending.push(Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength));
    size += piece.length;
    if (size >= bytes) {
      const all = Buffer.concat(pending, size);
      for (let at = 0; at < all.length; at += bytes) yield all.subarray(at, at + bytes);
      pending = [];
      size = 0;
    }
  }
  if (size > 0) yield Buffer.concat(pending, size);
}
