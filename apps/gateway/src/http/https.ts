import { isIP } from "node:net";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";

/** "::ffff:10.0.0.1" and "10.0.0.1" are the same peer. */
export function normalizeIp(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return (mapped ? mapped[1]! : address).toLowerCase();
}

/** Every value of a comma-separated header, over all its lines, in order (client first, nearest proxy last). */
function listHeader(req: IncomingMessage, name: string): string[] {
  const lines = req.headersDistinct[name] ?? [];
  return lines.flatMap((line) => line.split(",")).map((value) => value.trim());
}

function isTrusted(address: string | undefined, trustedProxies: ReadonlySet<string>): boolean {
  if (!address) return false;
  const ip = normalizeIp(address);
  return isIP(ip) !== 0 && trustedProxies.has(ip);
}

/**
 * How many hops at the end of the forwarding chain are trusted proxies: the
 * peer itself, then each `X-Forwarded-For` entry (right to left) that is a
 * trusted proxy too. 0 when the peer is not trusted (its headers mean nothing).
 */
function trustedHops(req: IncomingMessage, trustedProxies: ReadonlySet<string>): { hops: number; forwardedFor: string[] } {
  const forwardedFor = listHeader(req, "x-forwarded-for");
  if (!isTrusted(req.socket.remoteAddress, trustedProxies)) return { hops: 0, forwardedFor };
  let hops = 1;
  for (let i = forwardedFor.length - 1; i >= 0 && isTrusted(forwardedFor[i], trustedProxies); i--) hops++;
  return { hops, forwardedFor };
}

/**
 * True when the request reached us over HTTPS: on our own TLS listener, or
 * through trusted TLS-terminating proxies. Proxies append to
 * `X-Forwarded-Proto`, so only its last values were written by proxies we
 * trust (one per trusted hop; anything before is whatever the client sent).
 * The nearest trusted proxy's value must be `https`, and an `http` anywhere in
 * the trusted part means some hop carried the request in clear.
 */
export function arrivedOverHttps(req: IncomingMessage, trustedProxies: ReadonlySet<string>): boolean {
  if ((req.socket as TLSSocket).encrypted === true) return true;
  const { hops } = trustedHops(req, trustedProxies);
  if (hops === 0) return false;
  const protos = listHeader(req, "x-forwarded-proto").map((value) => value.toLowerCase());
  if (protos.length === 0) return false;
  const trusted = protos.slice(-Math.min(hops, protos.length));
  return trusted.every((proto) => proto === "https");
}

/**
 * The address of the client a request came from: the peer, or behind trusted
 * proxies the nearest `X-Forwarded-For` entry that is not one of them (what
 * the client itself wrote further left is not believed).
 */
export function clientAddress(req: IncomingMessage, trustedProxies: ReadonlySet<string>): string {
  const peer = normalizeIp(req.socket.remoteAddress ?? "unknown");
  const { hops, forwardedFor } = trustedHops(req, trustedProxies);
  if (hops === 0) return peer;
  const entry = forwardedFor[forwardedFor.length - hops];
  return entry !== undefined && isIP(normalizeIp(entry)) !== 0 ? normalizeIp(entry) : peer;
}
