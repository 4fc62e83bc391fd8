import type { RequestHandler } from "express";

const EXPOSED = "Request-Id, Api-Version, Idempotent-Replayed, Original-Request, Retry-After, Stripe-Should-Retry, WWW-Authenticate";
const ALLOWED_HEADERS = "Authorization, Content-Type, Idempotency-Key";

/**
 * Cross-origin access, so that publishable keys work from browsers. Keys travel
 * in the Authorization header, never in cookies, so any origin may call; a
 * preflight (OPTIONS with Access-Control-Request-Method) on a known path gets
 * 204 with the path's methods.
 */
export function cors(methodsOf: (path: string) => readonly string[] | undefined): RequestHandler {
  return (req, res, next) => {
    res.setHeader("Access-Control-Allow-Origin", "*");
    res.setHeader("Access-Control-Expose-Headers", EXPOSED);
    const methods = req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined ? methodsOf(req.path) : undefined;
    if (!methods) {
      next();
      return;
    }
    res.setHeader("Access-Control-Allow-Methods", methods.join(", "));
    res.setHeader("Access-Control-Allow-Headers", ALLOWED_HEADERS);
    res.setHeader("Access-Control-Max-Age", "600");
    res.removeHeader("Content-Type");
    res.status(204).end();
  };
}
