import {
  KeyKind,
  ANSWER_HEADERS_METADATA,
  catalogueError,
  IDEMPOTENCY_KEY_METADATA,
  REQUEST_FINGERPRINT_METADATA,
  REQUEST_ID_METADATA,
  type AnyErrorCode,
  type IdempotentReplay,
} from "@rms/proto";
import type { Request, RequestHandler, Response } from "express";
import type { Logger } from "pino";
import { callCore, type CoreCall, type CoreClients } from "../core.js";
import { ApiError, errorBody, toApiError } from "../errors.js";
import { authenticate, authorize, presentedKeyMetadata, verify, type Authenticated } from "../http/auth.js";
import { requestParams } from "../http/body.js";
import { rejectUnknown } from "../http/params.js";
import type { PrincipalCache } from "../http/principal-cache.js";
import { requestIdOf } from "../http/request-id.js";
import { recordParams, recordPrincipal } from "../http/request-log.js";
import {
  answerHeaders,
  idempotencyKeyOf,
  requestFingerprint,
  scopeId,
  sendReplay,
  type IdempotencyLease,
  type IdempotencyStore,
  type RecordedHeader,
  type RecordedResponse,
  type RecordSealer,
} from "../idempotency/index.js";
import { enforceRateLimit, type RateLimiter } from "../ratelimit/index.js";
import { DEFAULT_FILES_MAX_BYTES, type GatewayConfig } from "../config.js";
import type { LocalStores, Operation, PreparedCall, StreamSpec } from "./operation.js";

/** What running an operation needs of the gateway. */
export interface RunDeps {
  readonly core: CoreClients;
  /** The gateway's own stores the local operations read (none: they answer 503). */
  readonly local?: LocalStores | undefined;
  readonly config: Pick<GatewayConfig, "rateLimits" | "filesMaxBytes">;
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
 * request are the same request. An operation whose answer core records under the key
 * (`answerInCore`: the resource create) skips begin and record: core's insert is both
 * (`answeredByCore`), and the gateway's record is used only when core says it decides.
 */
async function runAuthenticated(operation: Operation, deps: RunDeps, auth: Authenticated, req: Request, res: Response): Promise<void> {
  const { core } = deps;
  const { principal } = auth;
  const requestId = requestIdOf(res);
  await enforceRateLimit(deps.rateLimiter, deps.config.rateLimits, principal, res);
  authorize(principal, operation.scope);
  if (operation.secretKeyOnly && principal.kind !== KeyKind.SECRET) throw new ApiError("insufficient_scope", "Only a secret key (sk_...) may do this.");
  if (operation.stream) return runStream(operation, operation.stream, deps, auth, req, res);

  // parse
  const key = operation.method === "POST" ? idempotencyKeyOf(req.headers) : undefined;
  const params = await requestParams(req, operation.bodyParameterLimit);
  recordParams(res, params);
  // Every operation declares its parameters once; anything else is refused before it runs.
  rejectUnknown(params, operation.params);
  const call = operation.prepare({ params, path: req.params as Record<string, string>, tenant: principal.tenant, origin: `https://${req.headers.host ?? "localhost"}` });
  const base = { [REQUEST_ID_METADATA]: requestId, ...presentedKeyMetadata(auth), ...(key !== undefined ? { [IDEMPOTENCY_KEY_METADATA]: key } : {}) };
  const callOptions = (metadata: Record<string, string>) => (operation.timeoutMs !== undefined ? { metadata, timeoutMs: operation.timeoutMs } : { metadata });
  const fingerprint = key !== undefined ? requestFingerprint(req.method, req.path, call.rpc, call.request) : undefined;
  // Under a key, core learns the fingerprint: it refuses a key that a create recorded in its slot for another request.
  const metadata = fingerprint !== undefined ? { ...base, [REQUEST_FINGERPRINT_METADATA]: fingerprint } : base;
  const execute = async (): Promise<Answer> => {
    const reply = call.local ? await readLocal(call.local, deps.local) : await callCore(core, call, callOptions(metadata), call.write);
    return { status: call.success.status, body: JSON.stringify(call.render(reply)), headers: {} };
  };
  if (key === undefined || fingerprint === undefined) return send(res, await execute());
  if (operation.answerInCore && (await answeredByCore(deps, call, callOptions({ ...metadata, [ANSWER_HEADERS_METADATA]: JSON.stringify(answerHeaders(res)) }), res))) return;

  // fingerprint -> begin
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
 * A stream operation (files): its query parameters (a GET's) are checked as usual, its body is its own to read.
 * Answered before its body was read to the end (a refusal, 413), the connection is closed after the answer.
 */
async function runStream(operation: Operation, stream: StreamSpec, deps: RunDeps, auth: Authenticated, req: Request, res: Response): Promise<void> {
  const key = operation.method === "POST" ? idempotencyKeyOf(req.headers) : undefined;
  const params = operation.method === "GET" ? await requestParams(req, operation.bodyParameterLimit) : (Object.create(null) as Record<string, unknown>);
  rejectUnknown(params, operation.params);
  const metadata = { [REQUEST_ID_METADATA]: requestIdOf(res), ...presentedKeyMetadata(auth), ...(key !== undefined ? { [IDEMPOTENCY_KEY_METADATA]: key } : {}) };
  try {
    await stream.handle(
      { req, res, tenant: auth.principal.tenant, path: req.params as Record<string, string>, params, key, metadata, core: deps.core },
      { idempotency: deps.idempotency, filesMaxBytes: deps.config.filesMaxBytes ?? DEFAULT_FILES_MAX_BYTES, logger: deps.logger },
    );
  } catch (error) {
    if (!req.complete && !res.headersSent) res.setHeader("Connection", "close");
    throw error;
  }
}

/**
 * A create whose answer core records under the key (`answerInCore`), with the headers this answer carries (all
 * set by now but the per-request ones, the same as the record path keeps): one core call, no record of the
 * gateway's. Core answers the first request as usual (a refusal of its parameters as an error, which core has
 * recorded too), and a repeat with `replay`: the first answer's request id and headers, and its resource as that
 * answer showed it or its error, sent as the record path sends a replay, byte for byte. A revoked key is refused
 * by core in the same call, replay or not. False when the gateway's record decides (`replay.unrecorded`: another
 * operation used the key, or a create answered before core recorded answers): then nothing was written, and the
 * record path runs.
 */
async function answeredByCore(deps: RunDeps, call: ReturnType<Operation["prepare"]> & CoreCall, options: { metadata: Record<string, string> }, res: Response): Promise<boolean> {
  const reply = (await callCore(deps.core, call, options, call.write)) as { replay?: IdempotentReplay };
  const replay = reply.replay;
  if (!replay) {
    send(res, { status: call.success.status, body: JSON.stringify(call.render(reply)), headers: {} });
    return true;
  }
  if (replay.unrecorded) return false;
  const headers = recordedHeaders(replay.headers);
  if (replay.error) {
    const refusal = toApiError(catalogueError(replay.error.code as AnyErrorCode, replay.error.message, replay.error.param || undefined));
    const errorHeaders = Object.entries(refusal.headers).map(([name, value]) => ({ name, value }));
    sendReplay(res, {
      status: refusal.status,
      body: Buffer.from(errorBody(refusal, replay.requestId), "utf8"),
      requestId: replay.requestId,
      headers: [...headers, ...errorHeaders],
    });
    return true;
  }
  sendReplay(res, { status: call.success.status, body: Buffer.from(JSON.stringify(call.render(reply)), "utf8"), requestId: replay.requestId, headers });
  return true;
}

/** The headers core kept with an answer, as this gateway gave them (`answerHeaders`, as JSON); none if unreadable. */
function recordedHeaders(text: string): RecordedHeader[] {
  try {
    const parsed: unknown = JSON.parse(text);
    return Array.isArray(parsed) ? (parsed as RecordedHeader[]) : [];
  } catch {
    return [];
  }
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

/** A local operation's read of the gateway's own store; 503 when that store is not there or does not answer. */
async function readLocal(read: NonNullable<PreparedCall["local"]>, stores: LocalStores | undefined): Promise<unknown> {
  if (!stores) throw ApiError.unavailable();
  try {
    return await read(stores);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    throw ApiError.unavailable(error);
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
