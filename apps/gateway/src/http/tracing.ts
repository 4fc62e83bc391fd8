import { bindEmitter, extractContext, SpanKind, SpanStatusCode, startEdgeSpan, tracingOn, untraced, withContext } from "@rms/telemetry";
import type { RequestHandler } from "express";
import { requestIdOf } from "./request-id.js";

/** A span's attributes are set once it is known to record (the samplers in use decide without them). */
const NO_ATTRIBUTES = {};

/**
 * One SERVER span per request while tracing is on (docs/observability.md, "Tracing"): the root of a new trace,
 * with the W3C `traceparent` the client sent, if any, kept as a link (a client's sampled flag must not force
 * sampling, nor its trace id be stored on events and jobs), named by the route pattern (`GET /v1/resources/:id`,
 * never a raw path); everything the request does, its calls to core included, runs inside it. With tracing off it is
 * not installed. Requests to `untracedPaths` (the health check probes and load balancers poll) record nothing, not
 * even their call to core. A request the sampler leaves out makes the span and its context only: no attributes, no
 * listeners.
 */
export function traceRequests(routeOf: (path: string) => string | undefined, untracedPaths: readonly string[] = []): RequestHandler | null {
  if (!tracingOn()) return null;
  return (req, res, next) => {
    if (untracedPaths.includes(req.path)) return untraced(next);
    const route = routeOf(req.path);
    const client = extractContext((key) => {
      const value = req.headers[key];
      return typeof value === "string" ? value : undefined;
    });
    const { span, context } = startEdgeSpan(route ? `${req.method} ${route}` : req.method, SpanKind.SERVER, NO_ATTRIBUTES, client);
    // Sampled out: the request still runs in the span's context, so core and the events it writes carry the trace
    // as not sampled (nothing downstream records it either), and that is all it costs.
    if (!span.isRecording()) return withContext(context, next);
    span.setAttributes({
      "http.request.method": req.method,
      "url.path": req.path.slice(0, 200),
      "url.scheme": "https",
      ...(route ? { "http.route": route } : {}),
      "rms.request_id": requestIdOf(res),
    });
    let ended = false;
    const end = (aborted: boolean) => {
      if (ended) return;
      ended = true;
      span.setAttribute("http.response.status_code", res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      if (aborted) span.setStatus({ code: SpanStatusCode.ERROR, message: "connection closed before the response ended" });
      span.end();
    };
    res.once("finish", () => end(false));
    res.once("close", () => end(!res.writableFinished));
    // The body's chunks and the response's end come from the socket: their listeners run in the span's context too.
    bindEmitter(context, req);
    bindEmitter(context, res);
    withContext(context, next);
  };
}
