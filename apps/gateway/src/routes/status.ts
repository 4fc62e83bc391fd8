import type { RequestHandler } from "express";
import type { Logger } from "pino";
import { HEALTH_TIMEOUT_MS, type CoreClients } from "../core.js";
import { API_VERSION, requestIdOf } from "../http/request-id.js";

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
    res.status(serving ? 200 : 503).send(JSON.stringify({ object: "status", status: serving ? "operational" : "degraded", version: API_VERSION }));
  };
}
