import type { ClientRequest, IncomingMessage } from "node:http";
import { deliveryHeaders } from "@rms/webhook-signing";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { performance } from "node:perf_hooks";
import { addressPolicy, type AddressPolicy } from "./address-policy.js";
import type { EndpointConnections } from "./connections.js";
import { bareHostname } from "./endpoint-url.js";
import { lookupPinnedTo, resolveAndPin, systemResolver, type ResolvedAddress, type Resolver } from "./pinned-lookup.js";
import { parseRetryAfter } from "./retry-after.js";

/** Success is a 2xx within this long (CONTRACT.md section 7, in ../shared/docs/); lookup, connect, TLS, headers and body all count. */
export const DELIVERY_TIMEOUT_MS = 15_000;
/** While a name has further addresses, one that has not connected within this long gives way to the next. */
export const CONNECT_ATTEMPT_MS = 5_000;
/** Bytes of a response body kept (and read: the socket is dropped after them). */
export const RESPONSE_BODY_CAP_BYTES = 1024;
export { WEBHOOK_USER_AGENT } from "@rms/webhook-signing";

export type AttemptError =
  | "timeout"
  | "dns_failed"
  | "connection_failed"
  | "tls_failed"
  | "invalid_response"
  | "redirect"
  | "http_error"
  | "blocked_address"
  | "invalid_url";

export interface DeliveryRequest {
  readonly url: string;
  /** The event id: `webhook-id`, the same on every attempt. */
  readonly eventId: string;
  /** The event JSON exactly as sent and signed. */
  readonly body: string;
  /** Every secret valid now, newest first: the current one, plus the old one during a rotation's grace period. */
  readonly secrets: readonly string[];
}

export interface DeliveryOptions {
  /** WEBHOOK_ALLOW_PRIVATE: lifts the SSRF policy and admits `http` urls (development and tests). */
  readonly allowPrivate?: boolean;
  /** Replaces the policy `allowPrivate` picks (tests). */
  readonly policy?: AddressPolicy;
  readonly resolve?: Resolver;
  readonly timeoutMs?: number;
  readonly now?: () => number;
  /** Certificates to trust instead of the system's (tests with their own certificate authority). */
  readonly ca?: string | readonly string[];
  /**
   * The endpoint's keep-alive connections (connections.ts), one agent per pinned address; absent, each attempt opens
   * a connection of its own and closes it.
   */
  readonly connections?: EndpointConnections;
}

export interface DeliveryOutcome {
  readonly status: "succeeded" | "failed";
  readonly responseStatus: number | null;
  /** The first KiB of the response body as UTF-8 text; null when no response came. */
  readonly responseBody: string | null;
  readonly error: AttemptError | null;
  readonly durationMs: number;
  /** `webhook-timestamp` of this attempt (Unix seconds). */
  readonly timestamp: number;
  /** The receiver answered 410 Gone: disable the endpoint now. */
  readonly disableEndpoint: boolean;
  /** From a 429 or 503 `Retry-After`: the next attempt waits at least this long. */
  readonly retryAfterSeconds: number | null;
  /** A short reason for logs (an error code, the blocked range); never secrets or bodies. */
  readonly detail: string | null;
}

type Ending = Pick<DeliveryOutcome, "error" | "detail"> & Partial<Pick<DeliveryOutcome, "responseStatus" | "responseBody">>;

function judgeResponse(status: number, headers: IncomingMessage["headers"], nowMs: number) {
  const retryAfter = status === 429 || status === 503 ? parseRetryAfter(headers["retry-after"], nowMs) : null;
  const error: AttemptError | null = status >= 200 && status < 300 ? null : status >= 300 && status < 400 ? "redirect" : "http_error";
  return { error, retryAfterSeconds: retryAfter, disableEndpoint: status === 410 };
}

function transportError(error: NodeJS.ErrnoException, phase: { connected: boolean; secured: boolean; tls: boolean }): AttemptError {
  if (error.code?.startsWith("HPE_")) return "invalid_response";
  // Anything that breaks between the TCP connect and the end of the handshake is the TLS layer's (certificate, protocol, SNI).
  if (phase.tls && phase.connected && !phase.secured) return "tls_failed";
  return "connection_failed";
}

/** Errors of a reused keep-alive connection that the receiver closed as the request went out: nothing was answered. */
const STALE_CONNECTION = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED"]);

/**
 * One delivery attempt of one event to one endpoint. Whatever the url, the
 * network or the receiver does, it resolves to an outcome and never rejects
 * (only a call without secrets, a caller's bug, throws). Redirects are not followed; the connection goes to
 * the addresses resolved and checked here, tried in order until one connects, with TLS verified against
 * the url's host name. With `connections`, an open connection to the same pinned address is used when there is one
 * (a reused connection that the receiver had just closed is replaced once by a new one, before any answer).
 */
export function deliver(request: DeliveryRequest, options: DeliveryOptions = {}): Promise<DeliveryOutcome> {
  const now = options.now ?? Date.now;
  const started = performance.now();
  const timestamp = Math.floor(now() / 1000);
  const allowPrivate = options.allowPrivate ?? false;
  const policy = options.policy ?? addressPolicy({ allowPrivate });
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;

  const outcome = (ending: Ending, judged?: ReturnType<typeof judgeResponse>): DeliveryOutcome => ({
    status: ending.error === null ? "succeeded" : "failed",
    responseStatus: ending.responseStatus ?? null,
    responseBody: ending.responseBody ?? null,
    error: ending.error,
    durationMs: Math.round(performance.now() - started),
    timestamp,
    disableEndpoint: judged?.disableEndpoint ?? false,
    retryAfterSeconds: judged?.retryAfterSeconds ?? null,
    detail: ending.detail,
  });

  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return Promise.resolve(outcome({ error: "invalid_url", detail: "unparseable url" }));
  }
  const tls = url.protocol === "https:";
  if (!tls && !(allowPrivate && url.protocol === "http:")) return Promise.resolve(outcome({ error: "invalid_url", detail: `scheme ${url.protocol}` }));
  if (url.username !== "" || url.password !== "") return Promise.resolve(outcome({ error: "invalid_url", detail: "credentials in url" }));
  const host = bareHostname(url);
  const body = Buffer.from(request.body, "utf8");
  const headers = deliveryHeaders({ eventId: request.eventId, timestampSeconds: timestamp, body: request.body, keys: request.secrets });

  return new Promise((resolve) => {
    let settled = false;
    let sent: ClientRequest | undefined;
    let responseStatus: number | null = null;
    const chunks: Buffer[] = [];
    let received = 0;
    const responseText = () => (responseStatus === null ? null : new TextDecoder().decode(Buffer.concat(chunks).subarray(0, RESPONSE_BODY_CAP_BYTES)));

    const finish = (ending: Ending, judged?: ReturnType<typeof judgeResponse>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // Dropping the socket is what bounds a slow or endless receiver: nothing more is read.
      sent?.destroy();
      resolve(outcome(ending, judged));
    };
    // A response that has not ended (or filled the cap) by the deadline is a timeout, whatever its status.
    const timer = setTimeout(
      () => finish({ error: "timeout", detail: `no complete answer within ${timeoutMs} ms`, responseStatus, responseBody: responseText() }),
      timeoutMs,
    );

    // One connection attempt per pinned address, in order: an address that cannot be connected to (refused,
    // unreachable, or no connection within CONNECT_ATTEMPT_MS while others remain) gives way to the next.
    const sendTo = (addresses: readonly ResolvedAddress[], index: number, fresh = false): void => {
      if (settled) return;
      const phase = { connected: false, secured: false, tls };
      const more = index + 1 < addresses.length;
      let movedOn = false;
      let connectTimer: NodeJS.Timeout | undefined;
      const moveOn = () => {
        movedOn = true;
        clearTimeout(connectTimer);
        attempt.destroy();
        sendTo(addresses, index + 1);
      };
      const send = tls ? httpsRequest : httpRequest;
      const attempt = send({
        method: "POST",
        protocol: url.protocol,
        hostname: host,
        port: url.port === "" ? undefined : Number(url.port),
        path: `${url.pathname}${url.search}`,
        headers,
        agent: fresh
          ? false
          : (options.connections?.agentFor({ tls, host, port: url.port === "" ? undefined : Number(url.port), address: addresses[index]! }) ?? false),
        lookup: lookupPinnedTo(host, addresses[index]!),
        ...(tls ? { servername: isIP(host) === 0 ? host : undefined, ...(options.ca ? { ca: options.ca as string | string[] } : {}) } : {}),
      });
      sent = attempt;
      attempt.on("socket", (socket) => {
        // A kept-alive connection: connected (and its TLS verified) when it was opened, to this same address.
        if (attempt.reusedSocket) {
          phase.connected = true;
          phase.secured = true;
          return;
        }
        if (more) connectTimer = setTimeout(() => !phase.connected && moveOn(), CONNECT_ATTEMPT_MS);
        socket.once("connect", () => {
          phase.connected = true;
          clearTimeout(connectTimer);
        });
        socket.once("secureConnect", () => (phase.secured = true));
      });
      attempt.on("error", (error: NodeJS.ErrnoException) => {
        if (movedOn) return;
        if (attempt.reusedSocket && responseStatus === null && STALE_CONNECTION.has(error.code ?? "")) {
          movedOn = true;
          return sendTo(addresses, index, true);
        }
        if (more && !phase.connected) return moveOn();
        finish({ error: transportError(error, phase), detail: error.code ?? error.message, responseStatus, responseBody: responseText() });
      });
      attempt.on("response", (response) => {
        responseStatus = response.statusCode ?? 0;
        const judged = judgeResponse(responseStatus, response.headers, now());
        const complete = () =>
          finish({ error: judged.error, detail: judged.error ? `status ${responseStatus}` : null, responseStatus, responseBody: responseText() }, judged);
        response.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          received += chunk.length;
          if (received >= RESPONSE_BODY_CAP_BYTES) complete();
        });
        response.on("end", complete);
        response.on("close", () => {
          if (!response.complete) finish({ error: "connection_failed", detail: "response cut short", responseStatus, responseBody: responseText() });
        });
      });
      attempt.end(body);
    };

    void resolveAndPin(host, policy, options.resolve ?? systemResolver)
      .then((pin) => {
        if (settled) return;
        if (!pin.ok) {
          if (pin.error === "dns_failed") return finish({ error: "dns_failed", detail: pin.detail });
          return finish({ error: "blocked_address", detail: `${pin.address} is ${pin.range}${pin.via ? ` (via ${pin.via})` : ""}` });
        }
        sendTo(pin.addresses, 0);
      })
      .catch((error: unknown) => finish({ error: "connection_failed", detail: (error as NodeJS.ErrnoException).code ?? "request failed" }));
  });
}
