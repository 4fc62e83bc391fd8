import { isIP } from "node:net";
import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import type { Socket } from "node:net";

/** Set on a connection (and its TLS socket) whose peer a PROXY protocol header named (proxy-protocol.ts). */
export const VIA_PROXY_PROTOCOL: unique symbol = Symbol("rms.viaProxyProtocol");

/** True when the connection's client was named by a PROXY protocol header. */
export function cameThroughProxyProtocol(socket: Socket): boolean {
  return (socket as Socket & { [VIA_PROXY_PROTOCOL]?: boolean })[VIA_PROXY_PROTOCOL] === true;
}

/**
 * One canonical spelling of a client address (CONTRACT.md section 8), whichever listener, PROXY header (v1 text,
 * v2 bytes) or forwarded header spelled it: an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`, `::ffff:a00:1`,
 * `0:0:0:0:0:ffff:a00:1`) is its IPv4 address; any other IPv6 address is in its RFC 5952 form (lowercase, zeros
 * compressed, as the WHATWG URL parser writes it). Anything that is not an IP address is only lowercased.
 */
export function normalizeIp(address: string): string {
  const known = CANONICAL.get(address);
  if (known !== undefined) return known;
  const canonical = canonicalIp(address);
  if (CANONICAL.size >= CANONICAL_MAX) CANONICAL.clear();
  CANONICAL.set(address, canonical);
  return canonical;
}

/**
 * Spellings already made canonical: each request asks for its peer's several times (the address rate limit, the
 * trusted-proxy check, its request log), and an IPv4-mapped peer (`::ffff:127.0.0.1`, a dual-stack listener's
 * usual) costs a URL parse each time (2 % of the gateway's busy time under the bench's load). Emptied when full.
 */
const CANONICAL = new Map<string, string>();
const CANONICAL_MAX = 4_096;

function canonicalIp(address: string): string {
  const trimmed = address.trim();
  const family = isIP(trimmed);
  if (family === 4) return trimmed;
  if (family !== 6) return trimmed.toLowerCase();
  let canonical: string;
  try {
    canonical = new URL(`http://[${trimmed}]/`).hostname.slice(1, -1);
  } catch {
    return trimmed.toLowerCase(); // a zone id (fe80::1%eth0): kept as given
  }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!mapped) return canonical;
  const high = Number.parseInt(mapped[1]!, 16);
  const low = Number.parseInt(mapped[2]!, 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
}

/**
 * The unit per-address limits count (connections, the address rate limit): an IPv4 address itself, an IPv6
 * address by its /64 (`2001:db8:1:2::/64`), so that rotating addresses inside one allocation gains nothing.
 */
export function addressBucket(address: string): string {
  const canonical = normalizeIp(address);
  if (isIP(canonical) !== 6) return canonical;
  // Expand the canonical form to its eight groups, keep the first four.
  const [head = "", tail] = canonical.split("::") as [string, string | undefined];
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return `${normalizeIp(`${groups.slice(0, 4).join(":")}::`)}/64`;
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
  // On a connection that arrived through the PROXY protocol the header named the client: forwarded headers are ignored.
  if (cameThroughProxyProtocol(req.socket) || !isTrusted(req.socket.remoteAddress, trustedProxies)) return { hops: 0, forwardedFor };
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
 * The address of the client a request came from, canonical (normalizeIp): the peer (the client a PROXY header
 * named, on such a connection), or behind trusted proxies the nearest `X-Forwarded-For` entry that is not one of
 * them (what the client itself wrote further left is not believed).
 */
export function clientAddress(req: IncomingMessage, trustedProxies: ReadonlySet<string>): string {
  const peer = normalizeIp(req.socket.remoteAddress ?? "unknown");
  const { hops, forwardedFor } = trustedHops(req, trustedProxies);
  if (hops === 0) return peer;
  const entry = forwardedFor[forwardedFor.length - hops];
  return entry !== undefined && isIP(normalizeIp(entry)) !== 0 ? normalizeIp(entry) : peer;
}
