import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { performance } from "node:perf_hooks";
import { deliveryHeaders } from "@rms/webhook-signing";

/** A forward gets its answer within this long, as a delivery does (CONTRACT.md section 7: a 2xx within 15 s). */
export const FORWARD_TIMEOUT_MS = 15_000;

/** What one forward ended with: the receiver's status, or why there was none. */
export type ForwardOutcome = { readonly status: number; readonly durationMs: number } | { readonly error: string; readonly durationMs: number };

/**
 * POSTs one event to `url` as a webhook delivery does: the event object as its JSON body and the delivery's headers
 * (`deliveryHeaders`, the code core's deliveries use), signed with `secret` at this moment. A redirect is an
 * answer like any (not followed); the body is read and dropped.
 */
export function forwardEvent(url: URL, event: { readonly id: string }, secret: string): Promise<ForwardOutcome> {
  const body = JSON.stringify(event);
  const headers = deliveryHeaders({ eventId: event.id, timestampSeconds: Math.floor(Date.now() / 1000), body, keys: [secret] });
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const outgoing = send(url, { method: "POST", headers, timeout: FORWARD_TIMEOUT_MS, agent: false }, (response) => {
      response.resume();
      response.on("end", () => resolve({ status: response.statusCode ?? 0, durationMs: elapsed() }));
      response.on("error", () => resolve({ status: response.statusCode ?? 0, durationMs: elapsed() }));
    });
    outgoing.on("timeout", () => outgoing.destroy(new Error(`no answer within ${FORWARD_TIMEOUT_MS / 1000} s`)));
    outgoing.on("error", (error: NodeJS.ErrnoException) =>
      resolve({ error: error.code === "ECONNREFUSED" ? "connection refused" : error.message, durationMs: elapsed() }),
    );
    outgoing.end(body);
  });
}
