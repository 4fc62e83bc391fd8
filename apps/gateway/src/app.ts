import { IDEMPOTENCY_KEY_METADATA, REQUEST_ID_METADATA } from "@rms/proto";
import express, { type Express, type Request, type RequestHandler, type Response } from "express";
import type { Logger } from "pino";
import type { GatewayConfig } from "./config.js";
import type { CoreClients } from "./core.js";
import { ApiError, errorMiddleware, toApiError } from "./errors.js";
import { authenticate, authorize, presentedKeyMetadata, verify, type Authenticated } from "./http/auth.js";
import { PrincipalCache } from "./http/principal-cache.js";
import { cors } from "./http/cors.js";
import { requestParams } from "./http/body.js";
import { rejectUnknown } from "./http/params.js";
import { refusePendingRevocations, requireHttps } from "./http/plain-http.js";
import { refuseHead } from "./http/head.js";
import type { KeyRevoker } from "./revocation/revoker.js";
import { normalizeIp } from "./http/https.js";
import { requestIdOf, responseHeaders } from "./http/request-id.js";
import { accessLog, recordPrincipal } from "./http/request-log.js";
import type { Operation } from "./routes/operation.js";
import { createResource } from "./routes/resources.create.js";
import { deleteResource } from "./routes/resources.delete.js";
import { listResources } from "./routes/resources.list.js";
import { retrieveResource } from "./routes/resources.retrieve.js";
import { updateResource } from "./routes/resources.update.js";
import { statusHandler } from "./routes/status.js";
import { OPENAPI_PATH, openApiHandler } from "./openapi.js";
import { IdempotentRequest, runOperation, type IdempotencyStore } from "./idempotency/index.js";
import { enforceRateLimit, type AddressRateLimit, type RateLimiter } from "./ratelimit/index.js";
import type { GatewayMetrics } from "./metrics.js";

/** Every authenticated public operation, described once. */
export const OPERATIONS: readonly Operation[] = [listResources, createResource, retrieveResource, updateResource, deleteResource];

export interface GatewayDeps {
  readonly core: CoreClients;
  readonly config: Pick<GatewayConfig, "trustedProxies" | "rateLimits">;
  readonly logger: Logger;
  /** Idempotency records (lock, fingerprint, recorded response) of POSTs with an Idempotency-Key. */
  readonly idempotency: IdempotencyStore;
  /** Per-key request rate limit. */
  readonly rateLimiter: RateLimiter;
  /** Revokes keys seen over plain HTTP, durably; refuses them meanwhile. */
  readonly revoker: KeyRevoker;
  /** The limit on requests per client address before a key is verified. */
  readonly addressLimit: AddressRateLimit;
  /** Request counts and latencies by route pattern; none when omitted. */
  readonly metrics?: GatewayMetrics;
  /** Recently verified keys (a fresh one per app when omitted). */
  readonly principals?: PrincipalCache;
}

const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

/**
 * Runs one operation: key, rate limit, scope, parameters, core (under the Idempotency-Key), response.
 * One core call per request: the key's principal usually comes from the cache, and the operation
 * call carries the presented key, which core re-checks; a key core refuses leaves the cache.
 */
function operationHandler(operation: Operation, deps: GatewayDeps, principals: PrincipalCache): RequestHandler {
  const { core } = deps;
  return async (req, res) => {
    const auth = await authenticate(req.headers, core, res, principals);
    recordPrincipal(res, auth.principal);
    try {
      await runAuthenticated(operation, deps, auth, req, res);
    } catch (error) {
      if (toApiError(error).status === 401) principals.drop(auth.secret);
      throw error;
    }
  };
}

async function runAuthenticated(operation: Operation, deps: GatewayDeps, auth: Authenticated, req: Request, res: Response): Promise<void> {
  const { core } = deps;
  const { principal } = auth;
  await enforceRateLimit(deps.rateLimiter, deps.config.rateLimits, principal);
  authorize(principal, operation.scope);
  const metadata: Record<string, string> = { [REQUEST_ID_METADATA]: requestIdOf(res), ...presentedKeyMetadata(auth) };
  const idempotencyKey = req.headers["idempotency-key"];
  if (operation.method === "POST" && idempotencyKey !== undefined) {
    if (typeof idempotencyKey !== "string" || !IDEMPOTENCY_KEY.test(idempotencyKey)) {
      throw new ApiError("parameter_invalid", "Invalid Idempotency-Key: 1 to 255 printable ASCII characters.", { param: "Idempotency-Key" });
    }
    metadata[IDEMPOTENCY_KEY_METADATA] = idempotencyKey;
  }
  const params = await requestParams(req);
  // Every operation declares its parameters once; anything else is refused before it runs.
  rejectUnknown(params, operation.params);
  const key = metadata[IDEMPOTENCY_KEY_METADATA];
  const idempotent =
    key === undefined
      ? undefined
      : new IdempotentRequest(
          deps.idempotency,
          { ...principal.tenant, key },
          { method: req.method, path: req.path, requestId: requestIdOf(res) },
          // A replay does not reach core: a cached key is confirmed live first.
          auth.fromCache ? () => verify(auth.secret, core, res) : undefined,
        );
  await runOperation(res, core, idempotent, deps.logger, (guarded) =>
    operation.handle({ params, path: req.params as Record<string, string>, tenant: principal.tenant, core: guarded, call: { metadata } }),
  );
}

function methodNotAllowed(allowed: readonly string[]): RequestHandler {
  const allow = allowed.join(", ");
  return (req: Request, _res: Response) => {
    throw new ApiError("method_not_allowed", `${req.method} is not allowed on ${req.path}; allowed: ${allow}.`, { headers: { Allow: allow } });
  };
}

/** `/v1/resources/:id` as a regular expression over request paths (one segment per parameter, optional trailing slash). */
function pathPattern(path: string): RegExp {
  const source = path
    .split("/")
    .map((part) => (part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}/?$`);
}

/** The public /v1 API as an Express app; the caller picks the servers it runs on. */
export function createGatewayApp(deps: GatewayDeps): Express {
  const { core, logger } = deps;
  const principals = deps.principals ?? new PrincipalCache();
  const app = express();
  app.disable("x-powered-by");
  app.disable("etag");
  app.set("query parser", false);
  app.set("case sensitive routing", true);

  const methodsByPath = new Map<string, string[]>([
    ["/v1/status", ["GET"]],
    [OPENAPI_PATH, ["GET"]],
  ]);
  for (const operation of OPERATIONS) methodsByPath.set(operation.path, [...(methodsByPath.get(operation.path) ?? []), operation.method]);
  const matchers = [...methodsByPath].map(([path, methods]) => ({ path, pattern: pathPattern(path), methods }));
  const methodsOf = (path: string) => matchers.find((m) => m.pattern.test(path))?.methods;

  app.use(responseHeaders());
  if (deps.metrics) app.use(deps.metrics.middleware((path) => matchers.find((m) => m.pattern.test(path))?.path));
  app.use(accessLog(logger));
  const trustedProxies = new Set(deps.config.trustedProxies.map(normalizeIp));
  const { addressLimit } = deps;
  app.use(requireHttps(trustedProxies, deps.revoker, addressLimit, logger));
  app.use(cors(methodsOf));
  app.use(refusePendingRevocations(deps.revoker));
  app.use(addressLimit.middleware());
  app.use(refuseHead(methodsOf));

  app.get("/v1/status", statusHandler(core, logger));
  app.get(OPENAPI_PATH, openApiHandler(OPERATIONS));
  for (const operation of OPERATIONS) {
    const route = app.route(operation.path);
    const handler = operationHandler(operation, deps, principals);
    if (operation.method === "GET") route.get(handler);
    else if (operation.method === "POST") route.post(handler);
    else route.delete(handler);
  }
  for (const [path, methods] of methodsByPath) app.all(path, methodNotAllowed(methods));

  app.use((req: Request) => {
    throw new ApiError("route_missing", `Unrecognized request URL (${req.method}: ${req.path.slice(0, 200)}).`);
  });
  app.use(errorMiddleware(logger));
  return app;
}
