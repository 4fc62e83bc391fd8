import { KeyKind, REQUEST_ID_METADATA } from "@rms/proto";
import type { Request, RequestHandler, Response } from "express";
import type { Logger } from "pino";
import { callCore, type CoreClients } from "../core.js";
import { ApiError, toApiError } from "../errors.js";
import { authenticate, authorize, presentedKeyMetadata, RefusedKeyError, type Authenticated } from "../auth/auth.js";
import { requestParams } from "../parsing/body.js";
import { rejectEmptyValues, rejectUnknown } from "../parsing/params.js";
import type { PrincipalCache } from "../auth/principal-cache.js";
import { requestIdOf } from "../http/request-id.js";
import { recordAnswer, recordParams, recordPrincipal } from "../http/facts.js";
import { idempotencyKeyOf, sendUnderKey } from "../idempotency/index.js";
import { enforceRateLimit, type RateLimiter } from "../ratelimit/index.js";
import { DEFAULT_FILES_MAX_BYTES, type GatewayConfig } from "../config.js";
import type { RenderedAnswer } from "../schema/objects.js";
import type { LocalStores, Operation, PreparedCall, StreamSpec } from "./operation.js";
import type { StreamServices } from "../streams/services.js";

/** What running an operation needs of the gateway. */
export interface RunDeps {
  readonly core: CoreClients;
  /** The gateway's own stores the local operations read (none: they answer 503). */
  readonly local?: LocalStores | undefined;
  readonly config: Pick<GatewayConfig, "rateLimits" | "filesMaxBytes">;
  readonly logger: Logger;
  readonly rateLimiter: RateLimiter;
  /** The event and request-log streams (docs/streams.md); absent: those operations answer 503. */
  readonly streams?: StreamServices | undefined;
}

/** An answer ready to send: status, body text and extra headers. */
interface Answer {
  readonly status: number;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Runs one operation: key, rate limit, scope, parameters, core (which keeps the Idempotency-Key), response.
 * One core call per request: the key's principal usually comes from the cache, and the operation
 * call carries the presented key, which core re-checks; a key core refuses leaves the cache.
 */
export function operationHandler(operation: Operation, deps: RunDeps, principals: PrincipalCache): RequestHandler {
  // No core call re-checks the key of an operation the gateway answers alone: its key is verified by core every time.
  const cache = operation.local ? undefined : principals;
  return async (req, res) => {
    const auth = await authenticateLimited(deps, req, res, cache);
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
 * The request's key (`authenticate`). A key core knows but refuses (revoked, expired) is limited per key before its
 * request is recorded for its account: a token of the key's own bucket, as its requests took while it was valid, so
 * a revoked key makes no more records than it could before; past it, 429 and nothing recorded (CONTRACT.md section 8;
 * the operator's access log still has the line). The record of the 401 keeps no text its client chose
 * (request-logs/capture.ts).
 */
async function authenticateLimited(deps: RunDeps, req: Request, res: Response, cache: PrincipalCache | undefined): Promise<Authenticated> {
  try {
    return await authenticate(req.headers, deps.core, res, cache);
  } catch (error) {
    if (!(error instanceof RefusedKeyError)) throw error;
    await enforceRateLimit(deps.rateLimiter, deps.config.rateLimits, error.principal, undefined, (cause) =>
      deps.logger.warn({ request_id: requestIdOf(res), err: cause instanceof Error ? cause.message : String(cause) }, "rate limiter unavailable: answered 503"),
    );
    recordPrincipal(res, error.principal);
    throw error;
  }
}

/**
 * parse -> call core, under the request's Idempotency-Key (idempotency/keyed-call.ts: core decides whether it runs,
 * replays, is reused or is in flight). Everything refused before the call (rate limit, scope, parameters) records
 * nothing.
 */
async function runAuthenticated(operation: Operation, deps: RunDeps, auth: Authenticated, req: Request, res: Response): Promise<void> {
  const { core } = deps;
  const { principal } = auth;
  const requestId = requestIdOf(res);
  await enforceRateLimit(deps.rateLimiter, deps.config.rateLimits, principal, res, (cause) =>
    deps.logger.warn({ request_id: requestId, err: cause instanceof Error ? cause.message : String(cause) }, "rate limiter unavailable: answered 503"),
  );
  if (operation.scope !== null) authorize(principal, operation.scope);
  else if (principal.kind === KeyKind.PUBLISHABLE && operation.method !== "GET")
    throw new ApiError("publishable_key_read_only", "Publishable keys are read-only. Use a secret or restricted key.");
  if (operation.secretKeyOnly && principal.kind !== KeyKind.SECRET && !(operation.orDashboardSession && principal.dashboardSession)) {
    throw new ApiError(
      "insufficient_scope",
      operation.orDashboardSession ? "Only a secret key (sk_...) or a dashboard session's key may do this." : "Only a secret key (sk_...) may do this.",
    );
  }
  if (operation.stream) return runStream(operation, operation.stream, deps, auth, req, res);

  // parse
  const key = operation.method === "POST" ? idempotencyKeyOf(req.headers) : undefined;
  const params = await requestParams(req, operation.bodyParameterLimit, operation.listParams);
  recordParams(res, params);
  // Every operation declares its parameters once; anything else is refused before it runs.
  rejectUnknown(params, operation.params);
  // A query string's parameters are filters and cursors, none of which can be unset: one rule for every list.
  if (operation.method === "GET") rejectEmptyValues(params);
  const call = operation.prepare({
    params,
    path: req.params as Record<string, string>,
    tenant: principal.tenant,
    key: principal,
    origin: `https://${req.headers.host ?? "localhost"}`,
  });
  const timeout = operation.timeoutMs !== undefined ? { timeoutMs: operation.timeoutMs } : {};
  if (call.local) return sendRendered(res, call.success.status, call.render(await readLocal(call.local, deps.local)));

  // call core (under the key)
  await sendUnderKey(req, res, key, {
    metadata: { [REQUEST_ID_METADATA]: requestId, ...presentedKeyMetadata(auth) },
    rpc: call.rpc,
    message: call.request,
    call: (metadata, onTrailers) => callCore(core, call, { metadata, onTrailers, ...timeout }, call.write),
    send: (reply) => sendRendered(res, call.success.status, call.render(reply)),
    render: (reply) => ({ status: call.success.status, text: call.render(reply).text }),
  });
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

/** A success body as rendered: the request log takes its object as it is rather than parsing the text back. */
function sendRendered(res: Response, status: number, rendered: RenderedAnswer): void {
  recordAnswer(res, rendered);
  send(res, { status, body: rendered.text, headers: {} });
}

/**
 * A stream operation (files): its query parameters (a GET's) are checked as usual, its body is its own to read.
 * Answered before its body was read to the end (a refusal, 413), the connection is closed after the answer.
 */
async function runStream(operation: Operation, stream: StreamSpec, deps: RunDeps, auth: Authenticated, req: Request, res: Response): Promise<void> {
  const key = operation.method === "POST" ? idempotencyKeyOf(req.headers) : undefined;
  const params = operation.method === "GET" ? await requestParams(req, operation.bodyParameterLimit) : (Object.create(null) as Record<string, unknown>);
  rejectUnknown(params, operation.params);
  if (operation.method === "GET") rejectEmptyValues(params);
  const metadata = { [REQUEST_ID_METADATA]: requestIdOf(res), ...presentedKeyMetadata(auth) };
  try {
    await stream.handle(
      {
        req,
        res,
        tenant: auth.principal.tenant,
        keyId: auth.principal.keyId,
        path: req.params as Record<string, string>,
        params,
        key,
        metadata,
        core: deps.core,
      },
      { filesMaxBytes: deps.config.filesMaxBytes ?? DEFAULT_FILES_MAX_BYTES, logger: deps.logger, streams: deps.streams, local: deps.local },
    );
  } catch (error) {
    if (!req.complete && !res.headersSent) res.setHeader("Connection", "close");
    throw error;
  }
}
