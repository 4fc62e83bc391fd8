import type { Metadata } from "@grpc/grpc-js";
import { ANSWER_HEADERS_METADATA, IDEMPOTENCY_KEY_METADATA, REQUEST_FINGERPRINT_METADATA, type IdempotentReplayTrailer } from "@rms/proto";
import type { Request, Response } from "express";
import { requestFingerprint } from "./fingerprint.js";
import { answerHeaders, recordedHeaders, replayTrailerOf, sendRefusalReplay, sendReplay } from "./replay.js";

/** One POST's call to core, as `sendUnderKey` makes it under the request's Idempotency-Key. */
export interface KeyedCall<T> {
  /** The call's metadata without the key's (the request id, the presented key). */
  readonly metadata: Readonly<Record<string, string>>;
  /** The RPC and the message the fingerprint covers: the request, or a stream's start message. */
  readonly rpc: string;
  readonly message: unknown;
  /** Calls core with `metadata` (the key's added under a key), reading its trailers with `onTrailers`. */
  call(metadata: Readonly<Record<string, string>>, onTrailers: (trailers: Metadata) => void): Promise<T>;
  /** Sends the answer to a call that ran. */
  send(reply: T): void;
  /** The status and body text a reply is answered with, as `send` first answered it: what a replay sends again. */
  render(reply: T): { readonly status: number; readonly text: string };
}

/**
 * A POST's call to core and its answer, streamed or not: the one place the gateway's side of the Idempotency-Key is
 * written (docs/idempotency-and-limits.md, "The flow"). Under a key the call carries it, the fingerprint of the
 * request (method, path, RPC and message: the JSON and form versions of one request are one request; a stream's
 * start, core adding its bytes' sha256 at its end) and the headers this answer carries by then; core decides whether
 * it runs, replays, is reused or is in flight, and marks a replay with its `rms-replay` trailer, which is sent here as
 * the first answer, byte for byte, with `Idempotent-Replayed` and `Original-Request`. Without a key it is a plain call.
 */
export async function sendUnderKey<T>(req: Request, res: Response, key: string | undefined, keyed: KeyedCall<T>): Promise<void> {
  if (key === undefined) return keyed.send(await keyed.call(keyed.metadata, () => undefined));
  const metadata = {
    ...keyed.metadata,
    [IDEMPOTENCY_KEY_METADATA]: key,
    [REQUEST_FINGERPRINT_METADATA]: requestFingerprint(req.method, req.path, keyed.rpc, keyed.message),
    // The headers this answer carries by now (all but the per-request ones and an error's own), recorded with it.
    [ANSWER_HEADERS_METADATA]: JSON.stringify(answerHeaders(res)),
  };
  let replay: IdempotentReplayTrailer | undefined;
  const onTrailers = (trailers: Metadata) => {
    replay = replayTrailerOf(trailers) ?? replay;
  };
  let reply: T;
  try {
    reply = await keyed.call(metadata, onTrailers);
  } catch (error) {
    if (!replay) throw error;
    // The first answer was this refusal of core's: the same error body, under the first request's id. A stream's
    // refusal decided before its first stream ended is replayed without reading the repeat's bytes: the rest of the
    // body is not read either, and the connection closes after the answer.
    if (!req.complete) res.setHeader("Connection", "close");
    return sendRefusalReplay(res, error, replay);
  }
  if (!replay) return keyed.send(reply);
  const { status, text } = keyed.render(reply);
  sendReplay(res, { status, body: Buffer.from(text, "utf8"), requestId: replay.requestId, headers: recordedHeaders(replay.headers) });
}
