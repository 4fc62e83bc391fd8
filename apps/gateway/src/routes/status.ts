import type { RequestHandler } from "express";
import type { Logger } from "pino";
import { HEALTH_TIMEOUT_MS, type CoreClients } from "../core.js";
import { API_VERSION, requestIdOf } from "../http/request-id.js";
import { constant, field, publicObject } from "../schema/objects.js";
import type { KeylessRoute } from "./operation.js";

export const STATUS_PATH = "/v1/status";

/** The status object: `operational`, or `degraded` while core or its database is unreachable. */
const StatusObject = publicObject<{ readonly serving: boolean }>("Status", {
  object: constant("status"),
  status: field({ type: "string", enum: ["operational", "degraded"] }, ({ serving }) => (serving ? "operational" : "degraded")),
  version: field({ type: "string", const: API_VERSION }, () => API_VERSION),
});

/** GET /v1/status, no key needed: 200 operational, or 503 degraded while core or its database is unreachable. */
export function statusHandler(core: CoreClients, logger: Logger): RequestHandler {
  return async (_req, res) => {
    const serving = await core.health(HEALTH_TIMEOUT_MS, requestIdOf(res)).then(
      (status) => status === "SERVING",
      (error: unknown) => {
        logger.warn({ request_id: requestIdOf(res), err: error instanceof Error ? error.message : String(error) }, "core health check failed");
        return false;
      },
    );
    if (!serving) res.setHeader("Retry-After", "1");
    res.status(serving ? 200 : 503).send(JSON.stringify(StatusObject.render({ serving })));
  };
}

/** How GET /v1/status is described. */
export const statusRoute: KeylessRoute = {
  path: STATUS_PATH,
  operationId: "getStatus",
  summary: "Service status",
  description: "No key needed. `degraded` (503) while MongoDB or the core is unreachable.",
  responses: {
    "200": { description: "Operational.", object: StatusObject },
    "503": { description: "Degraded.", object: StatusObject, retryAfter: true },
  },
};
