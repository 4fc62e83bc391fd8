import { randomBytes } from "node:crypto";
import type { RequestHandler, Response } from "express";

export const API_VERSION = "1.4";
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `req_` and 24 random base62 characters (about 143 bits). */
export function newRequestId(): string {
  let out = "req_";
  while (out.length < 28) {
    for (const byte of randomBytes(32)) {
      // 248 = 4 * 62: rejecting the top bytes keeps every character equally likely.
      if (byte < 248 && out.length < 28) out += ALPHABET[byte % 62];
    }
  }
  return out;
}

/** The request id of the response being built (set by `responseHeaders`). */
export function requestIdOf(res: Response): string {
  return (res.locals["requestId"] as string | undefined) ?? "";
}

/** First middleware: a fresh request id and the headers every response carries. */
export function responseHeaders(): RequestHandler {
  return (_req, res, next) => {
    const id = newRequestId();
    res.locals["requestId"] = id;
    res.setHeader("Request-Id", id);
    res.setHeader("Api-Version", API_VERSION);
    res.setHeader("Content-Type", "application/json; charset=utf-8");
    res.setHeader("Cache-Control", "no-store");
    next();
  };
}
