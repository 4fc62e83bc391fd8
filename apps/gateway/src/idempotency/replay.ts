import type { IncomingHttpHeaders } from "node:http";
import type { Response } from "express";
import { ApiError } from "../errors.js";
import type { RecordedResponse } from "./store.js";

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

/** Sends a recorded response again, byte for byte, marked as a replay of the request that produced it. */
export function sendReplay(res: Response, recorded: RecordedResponse): void {
  res.status(recorded.status);
  res.setHeader(REPLAYED_HEADER, "true");
  if (recorded.requestId) res.setHeader(ORIGINAL_REQUEST_HEADER, recorded.requestId);
  res.send(recorded.body);
}
