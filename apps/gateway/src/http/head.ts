import type { RequestHandler } from "express";
import { ApiError } from "../errors.js";

/**
 * HEAD is not part of the API: on a known path it is 405 with the path's
 * methods in `Allow` (which never lists HEAD), like any other wrong verb.
 * Express would otherwise answer it as a GET while `Allow` denies it.
 */
export function refuseHead(methodsOf: (path: string) => readonly string[] | undefined): RequestHandler {
  return (req, _res, next) => {
    const methods = req.method === "HEAD" ? methodsOf(req.path) : undefined;
    if (!methods) {
      next();
      return;
    }
    const allow = methods.join(", ");
    throw new ApiError("method_not_allowed", `HEAD is not allowed on ${req.path}; allowed: ${allow}.`, { headers: { Allow: allow } });
  };
}
