import { isIP, type Server, type Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { readFirstBytes } from "./first-bytes.js";
import { normalizeIp, VIA_PROXY_PROTOCOL } from "./client-address.js";

/**
 * The PROXY protocol (HAProxy's, versions 1 and 2), accepted only from PROXY_PROTOCOL_PEERS (configured apart from
 * TRUSTED_PROXIES, whose forwarded headers are believed: CONTRACT.md section 8): a load balancer in TCP
 * mode (TLS still ends here) writes the client's address in a header before the connection's first byte, and the
 * connection's `remoteAddress` becomes that address. Everything that reads the peer (per-address limits, the
 * plain-HTTP listener's refusal, logs) then sees the client, not the proxy. A connection from any other peer is
 * never read for a header (its bytes go to TLS or HTTP untouched: a header there fails like any other garbage),
 * and a trusted peer may also connect without one (a TLS-terminating proxy sending `X-Forwarded-For`).
 */

/** The 12 bytes every version 2 header begins with. */
const V2_SIGNATURE = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
const V1_PREFIX = Buffer.from("PROXY ", "ascii");
/** A version 1 header is at most 107 bytes with its CRLF. */
const V1_MAX = 107;
/** Addresses plus the TLVs a proxy may add (HAProxy's unique id, authority, ...): far below this. */
const V2_MAX = 16 + 4_096;
/** A trusted proxy that connects and sends nothing decisive within this is dropped. */
export const HEADER_TIMEOUT_MS = 10_000;

/** What a header said: the client's address and port, or `null` for a header that names none (v2 LOCAL, v1 UNKNOWN). */
type Parsed = { kind: "header"; length: number; client: { address: string; port: number } | null } | { kind: "none" } | { kind: "more" } | { kind: "invalid" };

/** True when `data` could still be the beginning of `prefix` (or begins with it). */
function startsLike(data: Buffer, prefix: Buffer): boolean {
  const n = Math.min(data.length, prefix.length);
  return data.subarray(0, n).equals(prefix.subarray(0, n));
}

function parseV1(data: Buffer): Parsed {
  const end = data.indexOf("\r\n");
  if (end === -1) return data.length >= V1_MAX ? { kind: "invalid" } : { kind: "more" };
  if (end + 2 > V1_MAX) return { kind: "invalid" };
  const fields = data.subarray(0, end).toString("ascii").split(" ");
  if (fields[1] === "UNKNOWN") return { kind: "header", length: end + 2, client: null };
  if (fields.length !== 6 || (fields[1] !== "TCP4" && fields[1] !== "TCP6")) return { kind: "invalid" };
  const [, family, source, , sourcePort] = fields as [string, string, string, string, string, string];
  const port = Number(sourcePort);
  if (isIP(source) !== (family === "TCP4" ? 4 : 6) || !/^\d{1,5}$/.test(sourcePort) || port > 65_535) return { kind: "invalid" };
  return { kind: "header", length: end + 2, client: { address: normalizeIp(source), port } };
}

function ipv6(bytes: Buffer): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  return groups.join(":");
}

function parseV2(data: Buffer): Parsed {
  if (data.length < 16) return { kind: "more" };
  const versionCommand = data[12]!;
  const length = 16 + data.readUInt16BE(14);
  if (versionCommand >> 4 !== 2 || length > V2_MAX) return { kind: "invalid" };
  if (data.length < length) return { kind: "more" };
  const command = versionCommand & 0x0f;
  if (command === 0x0) return { kind: "header", length, client: null }; // LOCAL: the proxy's own connection (a health check)
  if (command !== 0x1) return { kind: "invalid" };
  const family = data[13]! >> 4;
  const body = data.subarray(16, length);
  if (family === 0x1 && body.length >= 12)
    return { kind: "header", length, client: { address: normalizeIp([...body.subarray(0, 4)].join(".")), port: body.readUInt16BE(8) } };
  if (family === 0x2 && body.length >= 36)
    return { kind: "header", length, client: { address: normalizeIp(ipv6(body.subarray(0, 16))), port: body.readUInt16BE(32) } };
  return { kind: "header", length, client: null }; // UNSPEC or a UNIX socket: no client address to take
}

/** Reads what is there of a header; decides as soon as the bytes allow it. */
export function parseProxyHeader(data: Buffer): Parsed {
  if (startsLike(data, V2_SIGNATURE)) return data.length < V2_SIGNATURE.length ? { kind: "more" } : parseV2(data);
  if (startsLike(data, V1_PREFIX)) return data.length < V1_PREFIX.length ? { kind: "more" } : parseV1(data);
  return { kind: "none" };
}

/** Makes `socket` report the client as its peer, marked as named by a PROXY header (forwarded headers are ignored on it). */
function presentAs(socket: Socket, client: { address: string; port: number }): void {
  const family = isIP(client.address) === 6 ? "IPv6" : "IPv4";
  Object.defineProperty(socket, VIA_PROXY_PROTOCOL, { value: true, configurable: true });
  Object.defineProperty(socket, "remoteAddress", { value: client.address, configurable: true });
  Object.defineProperty(socket, "remotePort", { value: client.port, configurable: true });
  Object.defineProperty(socket, "remoteFamily", { value: family, configurable: true });
}

/**
 * Accepts PROXY protocol headers on `server` (HTTP or HTTPS) from `peers` (PROXY_PROTOCOL_PEERS). Call it once
 * every other `connection` listener is attached: they run after the header has been read, in their order.
 */
export function acceptProxyProtocol(server: Server, peers: ReadonlySet<string>): void {
  if (peers.size === 0) return;
  const listeners = server.listeners("connection") as ((socket: Socket) => void)[];
  server.removeAllListeners("connection");
  const proceed = (socket: Socket) => {
    for (const listener of listeners) listener.call(server, socket);
  };
  server.on("connection", (socket: Socket) => {
    if (!peers.has(normalizeIp(socket.remoteAddress ?? ""))) return proceed(socket);
    readFirstBytes(socket, HEADER_TIMEOUT_MS, (received) => {
      const parsed = parseProxyHeader(received);
      if (parsed.kind === "more") return undefined;
      return () => {
        if (parsed.kind === "invalid") {
          socket.destroy();
          return;
        }
        const rest = parsed.kind === "header" ? received.subarray(parsed.length) : received;
        if (parsed.kind === "header" && parsed.client) presentAs(socket, parsed.client);
        // A header without a client (v2 LOCAL, v1 UNKNOWN: the proxy's own health check) still came through the protocol.
        else if (parsed.kind === "header") Object.defineProperty(socket, VIA_PROXY_PROTOCOL, { value: true, configurable: true });
        if (rest.length > 0) socket.unshift(rest);
        proceed(socket);
      };
    });
  });
  // HTTPS: the TLS socket wrapping the connection reports its own peer; it takes the client's from the connection.
  server.prependListener("secureConnection", (tls: TLSSocket) => {
    const raw = (tls as TLSSocket & { _parent?: Socket })._parent;
    if (raw && Object.hasOwn(raw, "remoteAddress")) presentAs(tls, { address: raw.remoteAddress!, port: raw.remotePort ?? 0 });
    else if (raw && Object.hasOwn(raw, VIA_PROXY_PROTOCOL)) Object.defineProperty(tls, VIA_PROXY_PROTOCOL, { value: true, configurable: true });
  });
}
