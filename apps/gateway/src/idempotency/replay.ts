import type { ClientRequest, IncomingHttpHeaders } from "node:http";
import type { Metadata } from "@grpc/grpc-js";
import { REPLAY_METADATA, type IdempotentReplayTrailer } from "@rms/proto";
import type { Response } from "express";
import { ApiError, errorBody, toApiError } from "../errors.js";

/** One header of a recorded answer, named as it was first sent. */
export interface RecordedHeader {
  readonly name: string;
  readonly value: string | readonly string[];
}

/** A response as first sent, as a replay sends it again: status, headers and body bytes. */
export interface RecordedResponse {
  readonly status: number;
  readonly body: Buffer;
  /** Request id of the request that produced it. */
  readonly requestId: string;
  /** Its headers but the per-request ones (`answerHeaders`), replayed as they were. */
  readonly headers?: readonly RecordedHeader[];
}

/** Header names of a replayed response. */
export const REPLAYED_HEADER = "Idempotent-Replayed";
export const ORIGINAL_REQUEST_HEADER = "Original-Request";

const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

/** The request's Idempotency-Key, if it sent one: 1 to 255 printable ASCII characters, else 400. */
export function idempotencyKeyOf(headers: IncomingHttpHeaders): string | undefined {
  const key = headers["idempotency-key"];
  if (key === undefined) return undefined;
  if (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key)) {
    throw new ApiError("parameter_invalid", "Invalid Idempotency-Key: 1 to 255 printable ASCII characters.", { param: "Idempotency-Key" });
  }
  return key;
}

/**
 * Headers of one request rather than of its answer, which a replay has its own of: `Request-Id` (the replay's
 * own id; the first request's is in `Original-Request`), the replay headers, the rate limit's (the replay's own
 * token), and what Node writes per
 * connection and per message as it sends (`Date`, `Connection`, `Keep-Alive`, the body's length or encoding).
 */
export const PER_REQUEST_HEADERS: ReadonlySet<string> = new Set(
  [
    "Request-Id",
    REPLAYED_HEADER,
    ORIGINAL_REQUEST_HEADER,
    "RateLimit",
    "RateLimit-Policy",
    "Date",
    "Connection",
    "Keep-Alive",
    "Content-Length",
    "Transfer-Encoding",
  ].map((name) => name.toLowerCase()),
);

/** The headers set on an answer about to be sent, but the per-request ones: what its replays send again. */
export function answerHeaders(res: Response): RecordedHeader[] {
  const headers: RecordedHeader[] = [];
  // Names as first spelled (`Stripe-Should-Retry`): Node's OutgoingMessage has getRawHeaderNames, which its
  // types declare on ClientRequest only.
  for (const name of (res as unknown as Pick<ClientRequest, "getRawHeaderNames">).getRawHeaderNames()) {
    const value = res.getHeader(name);
    if (value === undefined || PER_REQUEST_HEADERS.has(name.toLowerCase())) continue;
    headers.push({ name, value: Array.isArray(value) ? value.map(String) : String(value) });
  }
  return headers;
}

/**
 * Sends a recorded response again: its status, its headers but the per-request ones (see `answerHeaders`), and
 * its body byte for byte, marked as a replay of the request that produced it.
 */
export function sendReplay(res: Response, recorded: RecordedResponse): void {
  res.status(recorded.status);
  for (const { name, value } of recorded.headers ?? []) res.setHeader(name, value);
  res.setHeader(REPLAYED_HEADER, "true");
  if (recorded.requestId) res.setHeader(ORIGINAL_REQUEST_HEADER, recorded.requestId);
  res.send(recorded.body);
}

/** Core's `rms-replay` trailer of a call under a key: there when core answered it as a replay of the key's first request. */
export function replayTrailerOf(trailers: Metadata): IdempotentReplayTrailer | undefined {
  const value = trailers.get(REPLAY_METADATA)[0];
  return typeof value === "string" ? (JSON.parse(value) as IdempotentReplayTrailer) : undefined;
}

/** The headers core kept with an answer, as a gateway gave them (`answerHeaders`, as JSON); none if unreadable. */
export function recordedHeaders(text: string): RecordedHeader[] {
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? (parsed as RecordedHeader[]) : [];
  } catch {
    return [];
  }
}

/**
 * Sends core's refusal of a call it marked as a replay: the first answer was this refusal, so the same error body
 * under the first request's id, with the first answer's recorded headers and the error's own.
 */
export function sendRefusalReplay(res: Response, error: unknown, replay: IdempotentReplayTrailer): void {
  const refusal = toApiError(error);
  const errorHeaders = Object.entries(refusal.headers).map(([name, value]) => ({ name, value }));
  sendReplay(res, {
    status: refusal.status,
    body: Buffer.from(errorBody(refusal, replay.requestId), "utf8"),
    requestId: replay.requestId,
    headers: [...recordedHeaders(replay.headers), ...errorHeaders],
  });
}
