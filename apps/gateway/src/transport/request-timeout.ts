import type { Request, RequestHandler } from "express";

/** The time a client has to send a whole request (headers and body), but on the routes that stream a body in. */
export const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Node's own `requestTimeout` is one setting for every request of a server, and an upload of 512 MiB over a slow
 * link takes longer than 30 s: so the server's is off and this applies it per request instead. A request whose body
 * has not fully arrived `REQUEST_TIMEOUT_MS` after it began is answered 408 (if nothing was answered yet) and its
 * connection closed, as Node does, whether or not the answer went out before (a refusal sent early does not let a
 * client trickle the rest of its body for ever). The routes `exempt` says stream their body (files) are cut only by
 * the idle timeout (nothing arriving for 30 s, the server's `timeout`); answered before their body ended (a
 * refusal, 413), their connection is closed once the answer is out. The headers keep their own limit
 * (`headersTimeout`, 10 s).
 */
export function requestTimeout(exempt: (req: Request) => boolean, ms = REQUEST_TIMEOUT_MS): RequestHandler {
  return (req, res, next) => {
    if (req.complete) return next();
    if (exempt(req)) {
      res.once("finish", () => {
        if (!req.complete) req.socket.destroySoon();
      });
      return next();
    }
    const timer = setTimeout(() => {
      if (req.complete) return;
      if (!res.headersSent) {
        res.setHeader("Connection", "close");
        res.writeHead(408).end();
      }
      req.socket.destroySoon();
    }, ms);
    timer.unref();
    const clear = () => clearTimeout(timer);
    req.once("end", clear);
    req.once("close", clear);
    next();
  };
}
