import { createHash } from "node:crypto";
import { RpcError } from "@rms/proto";
import type { Response } from "express";
import { ApiError, errorBody, toApiError } from "../../errors.js";
import { requestIdOf } from "../../http/request-id.js";
import { answerHeaders, requestFingerprint, sendReplay, type RecordedResponse } from "../../idempotency/index.js";
import type { StreamDeps, StreamInput } from "../operation.js";

/** The JSON answer of a stream upload: status and object. */
export interface UploadAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** A body hashed as it is read (a repeat under an Idempotency-Key is compared with the first by its bytes, not stored). */
export interface HashedBody {
  readonly sha256: string;
  readonly size: number;
  /** The fields besides the bytes that make the request what it is (a file's purpose and filename). */
  readonly fields: Readonly<Record<string, unknown>>;
}

function sendAnswer(res: Response, answer: UploadAnswer): void {
  res.status(answer.status).send(JSON.stringify(answer.body));
}

/**
 * Runs an upload (a POST whose body streams to core) under its Idempotency-Key, with the gateway's records
 * (docs/idempotency-and-limits.md): the record's fingerprint is the route's (the bytes are not known before they
 * stream), and a repeat whose record is there reads its body through a hash only (nothing stored) and is answered
 * the first response when its bytes and fields are those the first answer shows, else `idempotency_key_reused`.
 * Core also binds the key to the file it made, so a repeat that finds no record (the first gateway died, its lock
 * expired) answers the same file. Refusals of the gateway's own (the body's form) record nothing; answers from
 * core below 500 are recorded, as for every other POST.
 */
export async function uploadUnderKey(
  input: StreamInput,
  deps: StreamDeps,
  rpc: string,
  upload: () => Promise<UploadAnswer>,
  hashBody: () => Promise<HashedBody>,
  sameRequest: (recorded: Record<string, unknown>, body: HashedBody) => boolean,
): Promise<void> {
  const { res, key, tenant } = input;
  if (key === undefined) return sendAnswer(res, await upload());
  const fingerprint = requestFingerprint("POST", input.req.path, rpc, { stream: true });
  const requestId = requestIdOf(res);
  const begun = await deps.idempotency.begin({ accountId: tenant.accountId, livemode: tenant.livemode, key }, fingerprint, requestId);
  if (begun.kind === "replay") return replayIfSame(res, begun.response, await hashBody(), sameRequest);
  let answer: UploadAnswer | undefined;
  try {
    answer = await upload();
  } catch (error) {
    const apiError = toApiError(error);
    // The gateway's own refusals, and what left the outcome open, record nothing: a retry runs again.
    if (!(error instanceof RpcError) || apiError.status >= 500 || apiError.status === 401) {
      await begun.lease.release().catch((cause: unknown) => deps.logger.warn({ request_id: requestId, err: String(cause) }, "idempotency lock not released"));
      throw error;
    }
    res.status(apiError.status);
    for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
    const body = errorBody(apiError, requestId);
    await begun.lease.complete({ status: apiError.status, body: Buffer.from(body), requestId, headers: answerHeaders(res) }).catch(() => undefined);
    res.send(body);
    return;
  }
  const text = JSON.stringify(answer.body);
  res.status(answer.status);
  await begun.lease
    .complete({ status: answer.status, body: Buffer.from(text), requestId, headers: answerHeaders(res) })
    .catch((cause: unknown) => deps.logger.warn({ request_id: requestId, err: String(cause) }, "idempotency record not written"));
  res.send(text);
}

function replayIfSame(res: Response, recorded: RecordedResponse, body: HashedBody, sameRequest: (recorded: Record<string, unknown>, body: HashedBody) => boolean): void {
  let first: unknown;
  try {
    first = JSON.parse(recorded.body.toString("utf8"));
  } catch {
    first = null;
  }
  const object = first !== null && typeof first === "object" ? (first as Record<string, unknown>) : {};
  // A recorded error is replayed as it is (it came from executing the first request); a recorded object when it is the same upload.
  if (recorded.status >= 400 || sameRequest(object, body)) {
    sendReplay(res, recorded);
    return;
  }
  throw new ApiError(
    "idempotency_key_reused",
    "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than the one used on the original request.",
  );
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
