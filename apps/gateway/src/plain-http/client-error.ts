import type { Server } from "node:http";
import type { Socket } from "node:net";
import { ApiError, errorBody } from "../errors.js";
import type { AddressRateLimit } from "../ratelimit/index.js";
import { leakedKeyCandidatesInRaw } from "../revocation/scan.js";
import type { KeyRevoker } from "../revocation/revoker.js";
import { normalizeIp } from "../transport/client-address.js";
import { httpsRequired } from "./refusal.js";
import { API_VERSION, newRequestId } from "../http/request-id.js";

/** What the plain-HTTP listener needs to treat a request it could not parse like any other plain request. */
export interface PlainListener {
  readonly trustedProxies: ReadonlySet<string>;
  readonly revoker: KeyRevoker;
  readonly addressLimit: AddressRateLimit;
}

const REASONS: Record<number, string> = { 400: "Bad Request", 403: "Forbidden", 413: "Content Too Large" };
/** How many bytes of each plain connection are kept to look for keys when its request cannot be parsed (above Node's 16 KiB header limit). */
const KEPT_BYTES = 128 * 1024;

/**
 * The first bytes of each plain-HTTP connection: when a request cannot be
 * parsed, Node's error holds only the last chunk read, and a key sent before it
 * must still be found.
 */
function keepFirstBytes(server: Server): WeakMap<Socket, Buffer[]> {
  const kept = new WeakMap<Socket, Buffer[]>();
  server.on("connection", (socket: Socket) => {
    const chunks: Buffer[] = [];
    let size = 0;
    kept.set(socket, chunks);
    const onData = (chunk: Buffer) => {
      chunks.push(chunk.subarray(0, KEPT_BYTES - size));
      size += chunk.length;
      if (size >= KEPT_BYTES) socket.off("data", onData);
    };
    socket.on("data", onData);
  });
  return kept;
}

/**
 * Requests Node refuses before Express sees them (malformed HTTP, oversized
 * headers) still get the envelope and the usual headers; timed-out or reset
 * connections are just closed. On the plain-HTTP listener (from anyone but a
 * trusted proxy) the answer is 403 https_required like every other, and keys
 * in the bytes received are revoked.
 */
export function answerClientErrors(server: Server, plain?: PlainListener): void {
  const kept = plain ? keepFirstBytes(server) : undefined;
  server.on("clientError", (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
    // Only HTTP parser errors (HPE_*) get an answer. Anything else (timeouts, resets, TLS failures such as a
    // handshake that never finished: ERR_TLS_HANDSHAKE_TIMEOUT, where there is no HTTP to answer with) is closed.
    if (!socket.writable || !error.code?.startsWith("HPE_")) {
      socket.destroy();
      return;
    }
    const requestId = newRequestId();
    const peer = normalizeIp(socket.remoteAddress ?? "");
    void (async () => {
      let apiError: ApiError;
      if (plain && !plain.trustedProxies.has(peer)) {
        apiError = httpsRequired();
        const received = Buffer.concat([...(kept?.get(socket) ?? []), ...(error.rawPacket ? [error.rawPacket] : [])]);
        await plain.revoker.revokeSeen(leakedKeyCandidatesInRaw(received), requestId, (count) => plain.addressLimit.takeUpTo(peer, count));
      } else {
        apiError =
          error.code === "HPE_HEADER_OVERFLOW"
            ? new ApiError("request_too_large", "The request headers are too large.")
            : new ApiError("parameter_invalid", "The request is not valid HTTP.");
      }
      if (!socket.writable) return;
      const body = errorBody(apiError, requestId);
      const extra = Object.entries(apiError.headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join("");
      socket.end(
        `HTTP/1.1 ${apiError.status} ${REASONS[apiError.status] ?? "Error"}\r\n` +
          `Request-Id: ${requestId}\r\nApi-Version: ${API_VERSION}\r\n${extra}Content-Type: application/json; charset=utf-8\r\nX-Content-Type-Options: ` +
          `nosniff\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
      // A client that does not read the answer does not keep the socket.
      setTimeout(() => socket.destroy(), 5_000).unref();
    })();
  });
}
