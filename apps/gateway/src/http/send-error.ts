import { RpcError, TransportError } from "@rms/proto";
import type { ErrorRequestHandler, Response } from "express";
import type { Logger } from "pino";
import { ApiError, errorBody, toApiError } from "../errors.js";
import { recordErrorCode } from "./facts.js";
import { requestIdOf } from "./request-id.js";

/** Writes an error response; every path that answers with an error goes through here. */
export function sendError(res: Response, error: ApiError): void {
  recordErrorCode(res, error.code);
  res.status(error.status);
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.type("application/json").send(errorBody(error, requestIdOf(res)));
}

/** The one Express error middleware: renders everything as the envelope, never a stack. */
export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return (error, _req, res, next) => {
    const apiError = toApiError(error);
    const cause = error instanceof ApiError && error.cause !== undefined ? error.cause : error;
    if (cause instanceof TransportError && cause.deadlineExceeded) {
      // Core was called but did not answer in time: slow (overloaded, or its database is), not unreachable.
      logger.warn(
        { request_id: requestIdOf(res), code: apiError.code, grpc_code: cause.grpcCode, cause: cause.message },
        "deadline exceeded: core did not answer a call within its deadline",
      );
    } else if (apiError.code === "service_unavailable") {
      // An outage of core or the database (or core's own answer that the deadline left it no time): one line, no stack.
      logger.warn(
        { request_id: requestIdOf(res), code: apiError.code, cause: cause instanceof Error ? cause.message : String(cause) },
        "dependency unavailable",
      );
    } else if (apiError.status >= 500) {
      // Log the cause (for operators), never send it.
      const detail = error instanceof RpcError ? { grpc_code: error.grpcCode, code: error.code, message: error.message } : { err: error };
      logger.error({ request_id: requestIdOf(res), ...detail }, "request failed");
    }
    if (res.headersSent) {
      next(error);
      return;
    }
    sendError(res, apiError);
  };
}
