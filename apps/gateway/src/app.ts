import express, { type Express, type Request, type RequestHandler, type Response } from "express";
import type { Logger } from "pino";
import type { GatewayConfig } from "./config.js";
import type { CoreClients } from "./core.js";
import { ApiError } from "./errors.js";
import { errorMiddleware } from "./http/send-error.js";
import { PrincipalCache } from "./auth/principal-cache.js";
import { cors } from "./http/cors.js";
import { refusePendingRevocations, requireHttps } from "./plain-http/refusal.js";
import { refuseHead } from "./http/head.js";
import type { KeyRevoker } from "./revocation/revoker.js";
import { normalizeIp } from "./transport/client-address.js";
import { responseHeaders } from "./http/request-id.js";
import { accessLog } from "./http/facts.js";
import { OPERATIONS } from "./routes/index.js";
import { operationHandler } from "./engine/run.js";
import { STATUS_PATH, statusHandler } from "./routes/status.js";
import { OPENAPI_PATH, openApiHandler } from "./openapi.js";
import type { AddressRateLimit, RateLimiter } from "./ratelimit/index.js";
import type { GatewayMetrics } from "./metrics.js";
import { traceRequests } from "./http/tracing.js";
import { DASHBOARD_PATH, dashboardRouter } from "./dashboard.js";
import { requestTimeout } from "./transport/request-timeout.js";
import { recordRequests } from "./request-logs/capture.js";
import type { RequestLogRecorder } from "./request-logs/recorder.js";
import type { LocalStores } from "./engine/operation.js";
import type { StreamServices } from "./streams/services.js";

export { OPERATIONS };

export interface GatewayDeps {
  readonly core: CoreClients;
  readonly config: Pick<GatewayConfig, "trustedProxies" | "rateLimits" | "filesMaxBytes">;
  readonly logger: Logger;
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
  /** The dashboard's built files (apps/dashboard/dist), served at `/dashboard/`; null or missing: a page saying it is not built. */
  readonly dashboardDir?: string | null;
  /** The gateway's own stores its local operations read (GET /v1/request_logs); those answer 503 when omitted. */
  readonly local?: LocalStores;
  /** The event and request-log streams (docs/streams.md); those operations answer 503 when omitted. */
  readonly streams?: StreamServices;
  /** Records every request answered to a key of an account (none recorded when omitted), kept `retentionDays`. */
  readonly requestLogs?: { readonly recorder: RequestLogRecorder; readonly retentionDays: number };
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

/** `find` remembering its last few answers by path (a request's middlewares ask for the same path in turn). */
function lastMatch<T>(find: (path: string) => T): (path: string) => T {
  const remembered = new Map<string, T>();
  return (path) => {
    if (remembered.has(path)) return remembered.get(path) as T;
    const found = find(path);
    // Bounded: paths carry ids, so most are asked for by one request only.
    if (remembered.size >= 64) remembered.delete(remembered.keys().next().value as string);
    remembered.set(path, found);
    return found;
  };
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
    [STATUS_PATH, ["GET"]],
    [OPENAPI_PATH, ["GET"]],
  ]);
  for (const operation of OPERATIONS) methodsByPath.set(operation.path, [...(methodsByPath.get(operation.path) ?? []), operation.method]);
  const matchers = [...methodsByPath].map(([path, methods]) => ({ path, pattern: pathPattern(path), methods }));
  // Several middlewares ask for one request's route (metrics, tracing, CORS, HEAD): one walk of the patterns per path.
  const matcherOf = lastMatch((path: string) => matchers.find((m) => m.pattern.test(path)));
  const methodsOf = (path: string) => matcherOf(path)?.methods;

  const routeOf = (path: string) => matcherOf(path)?.path;
  app.use(responseHeaders());
  // The 30 s to receive a whole request, but on the routes whose body streams in (files): they are cut when idle.
  const streamed = matchers.filter((m) => OPERATIONS.some((o) => o.path === m.path && o.stream?.streamsBody));
  app.use(requestTimeout((req) => req.method === "POST" && streamed.some((m) => m.pattern.test(req.path))));
  // Before the access log, so that its line carries the request's trace id; not the health check that probes poll.
  const tracing = traceRequests(routeOf, [STATUS_PATH]);
  if (tracing) app.use(tracing);
  if (deps.metrics) app.use(deps.metrics.middleware(routeOf));
  app.use(accessLog(logger));
  const trustedProxies = new Set(deps.config.trustedProxies.map(normalizeIp));
  if (deps.requestLogs) app.use(recordRequests(deps.requestLogs.recorder, { retentionDays: deps.requestLogs.retentionDays, trustedProxies }));
  const { addressLimit } = deps;
  app.use(requireHttps(trustedProxies, deps.revoker, addressLimit));
  app.use(cors(methodsOf));
  app.use(refusePendingRevocations(deps.revoker));
  app.use(addressLimit.middleware());
  app.use(refuseHead(methodsOf));

  app.use(DASHBOARD_PATH, dashboardRouter(deps.dashboardDir ?? null));
  app.get(STATUS_PATH, statusHandler(core, logger));
  app.get(OPENAPI_PATH, openApiHandler(OPERATIONS));
  // Path by path, each with its 405 right after its verbs, in the order of OPERATIONS: a fixed path listed before
  // a parameterized one it looks like (`/v1/resources/search`, `/v1/resources/:id`) is its own, whatever the verb.
  for (const [path, methods] of methodsByPath) {
    for (const operation of OPERATIONS.filter((o) => o.path === path)) {
      const route = app.route(operation.path);
      const handler = operationHandler(operation, deps, principals);
      if (operation.method === "GET") route.get(handler);
      else if (operation.method === "POST") route.post(handler);
      else route.delete(handler);
    }
    app.all(path, methodNotAllowed(methods));
  }

  app.use((req: Request) => {
    throw new ApiError("route_missing", `Unrecognized request URL (${req.method}: ${req.path.slice(0, 200)}).`);
  });
  app.use(errorMiddleware(logger));
  return app;
}
