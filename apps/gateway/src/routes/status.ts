import type { RequestHandler } from "express";
import type { Logger } from "pino";
import { RELEASE } from "@rms/config";
import { DATABASE_HEALTH_SERVICE } from "@rms/proto";
import { HEALTH_TIMEOUT_MS, type CoreClients } from "../core.js";
import { API_VERSION, requestIdOf } from "../http/request-id.js";
import { constant, field, publicObject } from "../schema/objects.js";
import type { KeylessRoute } from "../engine/operation.js";

export const STATUS_PATH = "/v1/status";

type Status = "operational" | "degraded";

/**
 * The status object: `operational`, or `degraded` while core or its database is unreachable or the database is slow;
 * the API's version label, and the release of the gateway that answered (during a rolling upgrade two are seen).
 */
const StatusObject = publicObject<{ readonly status: Status }>("Status", {
  object: constant("status"),
  status: field({ type: "string", enum: ["operational", "degraded"] }, ({ status }) => status),
  version: field({ type: "string", const: API_VERSION }, () => API_VERSION),
  release: field(
    {
      type: "string",
      pattern: "^\\d+\\.\\d+\\.\\d+$",
      example: RELEASE,
      description: "The software release of the gateway that answered (`1.4.N`; the API's label stays `version`).",
    },
    () => RELEASE,
  ),
});

/**
 * GET /v1/status, no key needed: 200 `operational`; 503 `degraded` while core or its database is unreachable
 * (nothing can be served); 200 `degraded` while the database answers slowly (core's DATABASE_HEALTH_SERVICE is
 * NOT_SERVING: requests are served, slowly, so the gateway stays ready). Core's two health names are asked
 * together; only an answered NOT_SERVING of the second counts (a core that does not know the name says nothing).
 */
export function statusHandler(core: CoreClients, logger: Logger): RequestHandler {
  return async (_req, res) => {
    const requestId = requestIdOf(res);
    const [serving, slow] = await Promise.all([
      core.health(HEALTH_TIMEOUT_MS, requestId).then(
        (status) => status === "SERVING",
        (error: unknown) => {
          logger.warn({ request_id: requestId, err: error instanceof Error ? error.message : String(error) }, "core health check failed");
          return false;
        },
      ),
      core.health(HEALTH_TIMEOUT_MS, requestId, DATABASE_HEALTH_SERVICE).then(
        (status) => status === "NOT_SERVING",
        () => false,
      ),
    ]);
    if (!serving) res.setHeader("Retry-After", "1");
    const status: Status = serving && !slow ? "operational" : "degraded";
    res.status(serving ? 200 : 503).send(JSON.stringify(StatusObject.render({ status })));
  };
}

/** How GET /v1/status is described. */
export const statusRoute: KeylessRoute = {
  path: STATUS_PATH,
  operationId: "getStatus",
  client: { namespace: "status", method: "retrieve" },
  summary: "Service status",
  description:
    "No key needed. `degraded` (503) while MongoDB or the core is unreachable; `degraded` (200) while MongoDB answers slowly (a ping over 1 s): " +
    "requests are served, slowly.",
  responses: {
    "200": { description: "Operational, or degraded but serving (the database answers slowly).", object: StatusObject },
    "503": { description: "Degraded.", object: StatusObject, retryAfter: true },
  },
};
