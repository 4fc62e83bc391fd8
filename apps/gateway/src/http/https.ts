import { isIP } from "node:net";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";

/** "::ffff:10.0.0.1" and "10.0.0.1" are the same peer. */
export function normalizeIp(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return (mapped ? mapped[1]! : address).toLowerCase();
}

/**
 * True when the request reached us over HTTPS: on our own TLS listener, or from a
 * trusted TLS-terminating proxy that says `X-Forwarded-Proto: https`. The header
 * from anyone else is ignored.
 */
export function arrivedOverHttps(req: IncomingMessage, trustedProxies: ReadonlySet<string>): boolean {
  if ((req.socket as TLSSocket).encrypted === true) return true;
  const peer = req.socket.remoteAddress;
  if (!peer || !isIP(normalizeIp(peer)) || !trustedProxies.has(normalizeIp(peer))) return false;
  const header = req.headers["x-forwarded-proto"];
  // A chain of proxies appends; the first value is what the client used.
  const proto = (Array.isArray(header) ? header[0] : header)?.split(",")[0]?.trim().toLowerCase();
  return proto === "https";
}
