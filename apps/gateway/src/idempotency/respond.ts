import type { Response } from "express";
import type { Logger } from "pino";
import type { CoreClients } from "../core.js";
import { errorBody, toApiError } from "../errors.js";
import { requestIdOf } from "../http/request-id.js";
import type { OperationResult } from "../routes/operation.js";
import { IdempotentReplay, type IdempotentRequest } from "./request.js";

/** Header names of a replayed response. */
export const REPLAYED_HEADER = "Idempotent-Replayed";
export const ORIGINAL_REQUEST_HEADER = "Original-Request";

/**
 * Runs an operation and answers. With an Idempotency-Key, the operation runs
 * over guarded core clients: its first core call takes the lock or replays the
 * recorded response. The outcome of an executed request (success, or an error
 * below 500) is recorded byte for byte; a 5xx (unknown outcome) releases the
 * lock, so a retry executes again (core's idempotent create makes that safe).
 * So does a 401: core refused the key (revoked or expired since it was cached)
 * and executed nothing; that answer belongs to the key, not to the request.
 */
export async function runOperation(
  res: Response,
  core: CoreClients,
  idempotent: IdempotentRequest | undefined,
  logger: Logger,
  run: (core: CoreClients) => Promise<OperationResult>,
): Promise<void> {
  if (!idempotent) {
    const result = await run(core);
    res.status(result.status).send(JSON.stringify(result.body));
    return;
  }
  let status: number;
  let body: string;
  let headers: Readonly<Record<string, string>> = {};
  try {
    const result = await run(idempotent.guard(core));
    status = result.status;
    body = JSON.stringify(result.body);
  } catch (error) {
    if (error instanceof IdempotentReplay) {
      res.status(error.response.status);
      res.setHeader(REPLAYED_HEADER, "true");
      if (error.response.requestId) res.setHeader(ORIGINAL_REQUEST_HEADER, error.response.requestId);
      res.send(error.response.body);
      return;
    }
    if (!idempotent.began) throw error; // refused before executing: nothing to record
    const apiError = toApiError(error);
    if (apiError.status >= 500 || apiError.status === 401) {
      await idempotent.release().catch((cause: unknown) => logLost(logger, res, cause));
      throw error;
    }
    status = apiError.status;
    body = errorBody(apiError, requestIdOf(res));
    headers = apiError.headers;
  }
  if (idempotent.began) {
    // If recording fails the client still gets the outcome; the lock expires and a retry re-executes.
    await idempotent.complete(status, Buffer.from(body, "utf8")).catch((cause: unknown) => logLost(logger, res, cause));
  }
  res.status(status);
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.send(body);
}

function logLost(logger: Logger, res: Response, cause: unknown): void {
  logger.warn({ request_id: requestIdOf(res), err: cause instanceof Error ? cause.message : String(cause) }, "idempotency record not written");
}
