import type { Server, Socket } from "node:net";
import { addressBucket, normalizeIp } from "./client-address.js";

/**
 * At most `max` open connections per client address, over every listener it
 * is attached to (HTTPS and plain HTTP share the count), so that one client
 * holding connections cannot take the server's `maxConnections` from everyone.
 * A connection over the limit is closed as soon as it is accepted, before TLS
 * or HTTP sees it. The address is the TCP peer (the client a PROXY header named,
 * in canonical form), counted by `addressBucket`: an IPv6 client by its /64. A
 * trusted proxy's connections (TRUSTED_PROXIES, or a PROXY_PROTOCOL_PEERS peer
 * that named no client) carry many clients and are not counted (the per-address
 * rate limit counts the address it forwarded for, request by request). Slow or idle connections
 * are closed by the server's timeouts (`SERVER_LIMITS`), which frees their place.
 */
export class ConnectionLimit {
  private readonly open = new Map<string, number>();
  private refusedCount = 0;

  constructor(
    readonly max: number,
    private readonly trustedProxies: ReadonlySet<string>,
    private readonly onRefused: () => void = () => undefined,
  ) {}

  /** Counts the connections of `server` from now on (before any other listener of its `connection` event). */
  attach(server: Server): void {
    server.prependListener("connection", (socket: Socket) => this.admit(socket));
  }

  /** Open connections counted for an address (for its /64 when IPv6). */
  openFrom(address: string): number {
    return this.open.get(addressBucket(address)) ?? 0;
  }

  /** Connections closed at once because their address had `max` open. */
  get refused(): number {
    return this.refusedCount;
  }

  private admit(socket: Socket): void {
    // No address: the peer is already gone, and Node closes the socket itself.
    if (socket.remoteAddress === undefined) return;
    const peer = normalizeIp(socket.remoteAddress);
    if (this.trustedProxies.has(peer)) return;
    const address = addressBucket(peer);
    const count = this.open.get(address) ?? 0;
    if (count >= this.max) {
      this.refusedCount++;
      this.onRefused();
      socket.destroy();
      return;
    }
    this.open.set(address, count + 1);
    socket.once("close", () => {
      const left = (this.open.get(address) ?? 1) - 1;
      if (left > 0) this.open.set(address, left);
      else this.open.delete(address);
    });
  }
}
