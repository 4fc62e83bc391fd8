import { IDEMPOTENCY_KEY_METADATA, REQUEST_ID_METADATA } from "@rms/proto";
import type { Request, RequestHandler, Response } from "express";
import type { Logger } from "pino";
import { callCore, type CoreClients } from "../core.js";
import { ApiError, errorBody, toApiError } from "../errors.js";
import { authenticate, authorize, presentedKeyMetadata, verify, type Authenticated } from "../http/auth.js";
import { requestParams } from "../http/body.js";
import { rejectUnknown } from "../http/params.js";
import type { PrincipalCache } from "../http/principal-cache.js";
import { requestIdOf } from "../http/request-id.js";
import { recordPrincipal } from "../http/request-log.js";
import {
  answerHeaders,
  idempotencyKeyOf,
  requestFingerprint,
  scopeId,
  sendReplay,
  type IdempotencyLease,
  type IdempotencyStore,
  type RecordedResponse,
  type RecordSealer,
} from "../idempotency/index.js";
import { enforceRateLimit, type RateLimiter } from "../ratelimit/index.js";
import type { GatewayConfig } from "../config.js";
import type { Operation } from "./operation.js";

/** What running an operation needs of the gateway. */
export interface RunDeps {
  readonly core: CoreClients;
  readonly config: Pick<GatewayConfig, "rateLimits">;
  readonly logger: Logger;
  readonly idempotency: IdempotencyStore;
  readonly rateLimiter: RateLimiter;
  readonly recordSealer: RecordSealer;
}

/** An answer ready to send: status, body text and extra headers. */
interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Runs one operation: key, rate limit, scope, parameters, core (under the Idempotency-Key), response.
 * One core call per request: the key's principal usually comes from the cache, and the operation
 * call carries the presented key, which core re-checks; a key core refuses leaves the cache.
 */
export function operationHandler(operation: Operation, deps: RunDeps, principals: PrincipalCache): RequestHandler {
  return async (req, res) => {
    const auth = await authenticate(req.headers, deps.core, res, principals);
    recordPrincipal(res, auth.principal);
    try {
      await runAuthenticated(operation, deps, auth, req, res);
    } catch (error) {
      if (toApiError(error).status === 401) principals.drop(auth.secret);
      throw error;
    }
  };
}

/**
 * parse -> fingerprint -> begin -> call core -> record. Everything refused before
 * `begin` (rate limit, scope, parameters) records nothing. The fingerprint is made
 * of the core call the request stands for, so the JSON and form versions of one
 * request are the same request.
 */
async function runAuthenticated(operation: Operation, deps: RunDeps, auth: Authenticated, req: Request, res: Response): Promise<void> {
  const { core } = deps;
  const { principal } = auth;
  const requestId = requestIdOf(res);
  await enforceRateLimit(deps.rateLimiter, deps.config.rateLimits, principal);
  authorize(principal, operation.scope);

  // parse
  const key = operation.method === "POST" ? idempotencyKeyOf(req.headers) : undefined;
  const params = await requestParams(req, operation.bodyParameterLimit);
  // Every operation declares its parameters once; anything else is refused before it runs.
  rejectUnknown(params, operation.params);
  const call = operation.prepare({ params, path: req.params as Record<string, string>, tenant: principal.tenant });
  const metadata = { [REQUEST_ID_METADATA]: requestId, ...presentedKeyMetadata(auth), ...(key !== undefined ? { [IDEMPOTENCY_KEY_METADATA]: key } : {}) };
  const execute = async (): Promise<Answer> => {
    const options = operation.timeoutMs !== undefined ? { metadata, timeoutMs: operation.timeoutMs } : { metadata };
    const reply = await callCore(core, call, options, call.write);
    return { status: call.success.status, body: JSON.stringify(call.render(reply)), headers: {} };
  };
  if (key === undefined) return send(res, await execute());

  // fingerprint -> begin
  const fingerprint = requestFingerprint(req.method, req.path, call.rpc, call.request);
  const scope = { ...principal.tenant, key };
  const begun = await deps.idempotency.begin(scope, fingerprint, requestId);
  if (begun.kind === "replay") {
    // A replay does not reach core: a cached key is confirmed live first.
    if (auth.fromCache) await verify(auth.secret, core, res);
    return sendReplay(res, operation.secretInAnswer ? openRecorded(deps, begun.response, scopeId(scope), res) : begun.response);
  }

  // call core -> record
  const answer = await executeUnderLock(execute, begun.lease, deps.logger, res);
  const body = Buffer.from(answer.body, "utf8");
  const recorded = operation.secretInAnswer ? deps.recordSealer.seal(body, scopeId(scope)) : body;
  // The record keeps every header of the answer as it goes out (but the per-request ones), for its replays.
  head(res, answer);
  const headers = answerHeaders(res);
  // If recording fails the client still gets the outcome; the lock expires and a retry re-executes.
  await begun.lease.complete({ status: answer.status, body: recorded, requestId, headers }).catch((cause: unknown) => logLost(deps.logger, res, cause));
  res.send(answer.body);
}

/**
 * The answer to record for an executed request: success, or an error below 500.
 * A 5xx (unknown outcome) releases the lock and is thrown, so a retry executes
 * again (core's idempotent create makes that safe). So does a 401: core refused
 * the key (revoked or expired since it was cached) and executed nothing; that
 * answer belongs to the key, not to the request.
 */
async function executeUnderLock(execute: () => Promise<Answer>, lease: IdempotencyLease, logger: Logger, res: Response): Promise<Answer> {
  try {
    return await execute();
  } catch (error) {
    const apiError = toApiError(error);
    if (apiError.status >= 500 || apiError.status === 401) {
      await lease.release().catch((cause: unknown) => logLost(logger, res, cause));
      throw error;
    }
    return { status: apiError.status, body: errorBody(apiError, requestIdOf(res)), headers: apiError.headers };
  }
}

/**
 * A sealed record opened for its replay. One that does not open (sealed under another gateway credential,
 * or changed in the database) cannot be replayed, and running the request again could repeat its effect: 500.
 */
function openRecorded(deps: RunDeps, recorded: RecordedResponse, scope: string, res: Response): RecordedResponse {
  try {
    return { ...recorded, body: deps.recordSealer.open(recorded.body, scope) };
  } catch {
    deps.logger.error({ request_id: requestIdOf(res) }, "a sealed idempotency record does not open");
    throw ApiError.internal();
  }
}

/** An answer's status and own headers, set on the response before its body is sent. */
function head(res: Response, answer: Answer): void {
  res.status(answer.status);
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
}

function send(res: Response, answer: Answer): void {
  head(res, answer);
  res.send(answer.body);
}

function logLost(logger: Logger, res: Response, cause: unknown): void {
  logger.warn({ request_id: requestIdOf(res), err: cause instanceof Error ? cause.message : String(cause) }, "idempotency record not written");
}
