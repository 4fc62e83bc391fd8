import { newRequestId } from "@rms/proto";
import type { RequestHandler, Response } from "express";

export { newRequestId };
export const API_VERSION = "1.4";

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
    // A browser takes every answer as the type it says: a JSON answer holding a client's text is never sniffed as HTML.
    res.setHeader("X-Content-Type-Options", "nosniff");
    next();
  };
}
