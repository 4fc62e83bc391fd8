import type { IncomingMessage, Server } from "node:http";
import type { Socket } from "node:net";

/**
 * How a connection closes after an answer sent before its request's body was read to the end (a refusal mid-upload,
 * an answer without `100 Continue`), as nginx's lingering close does: the answer is sent with `Connection: close`,
 * and what the client still sends is read and dropped until the body ends or the client closes, or for at most
 * LINGER.maxMs, LINGER.idleMs without a byte, or LINGER.maxBytes. Closed at once instead, a connection with unread
 * bytes is reset by the kernel, and a client still sending meets the reset (curl: `Send failure: Broken pipe`)
 * before it reads the answer, which is then lost.
 */
export const LINGER = {
  /** nginx's `lingering_time`. */
  maxMs: 30_000,
  /** nginx's `lingering_timeout`. */
  idleMs: 5_000,
  /** One part's most bytes: a client that keeps sending past it is cut. */
  maxBytes: 64 * 1024 * 1024,
  /** How often the bounds are looked at. */
  checkEveryMs: 250,
} as const;

/** The request each connection serves now (the last one begun on it). */
const current = new WeakMap<Socket, IncomingMessage>();
/** The connections lingering now. */
const lingering = new WeakSet<Socket>();

/**
 * Makes every connection of `server` linger (above) when Node closes it after an answer while the request's body
 * is unread: Node closes a connection whose answer says `Connection: close` by `socket.destroySoon()` once the
 * answer is written, and the gateway's own early closes (transport/request-timeout.ts) do too, so that is the one place
 * to take over. A body read to its end closes as before.
 */
export function lingerOnEarlyClose(server: Server, limits: { maxMs: number; idleMs: number; maxBytes: number; checkEveryMs: number } = LINGER): void {
  server.on("request", (req: IncomingMessage) => {
    const socket = req.socket;
    if (!current.has(socket)) {
      const destroySoon = socket.destroySoon;
      socket.destroySoon = function (this: Socket) {
        const unread = current.get(this);
        if (unread && !unread.complete && !this.destroyed) linger(this, unread, limits);
        else destroySoon.call(this);
      };
    }
    current.set(socket, req);
  });
}

function linger(socket: Socket, req: IncomingMessage, limits: { maxMs: number; idleMs: number; maxBytes: number; checkEveryMs: number }): void {
  // Node's close after the answer and the gateway's own (transport/request-timeout.ts) may both ask.
  if (lingering.has(socket)) return;
  lingering.add(socket);
  const started = Date.now();
  const firstByte = socket.bytesRead;
  let seen = firstByte;
  let movedAt = started;
  const close = () => {
    clearInterval(check);
    socket.off("data", measure);
    socket.destroy();
  };
  // Bytes as the connection counts them: at each piece where the socket emits them (TLS), and on the timer where
  // Node's parser reads them itself (plain HTTP).
  function measure() {
    const now = Date.now();
    if (socket.bytesRead !== seen) {
      seen = socket.bytesRead;
      movedAt = now;
    }
    if (now - started >= limits.maxMs || now - movedAt >= limits.idleMs || seen - firstByte > limits.maxBytes) close();
  }
  const check = setInterval(measure, limits.checkEveryMs);
  check.unref();
  socket.on("data", measure);
  // The body's bytes are dropped as they come, whoever was reading them (busboy, the body reader).
  req.unpipe();
  req.removeAllListeners("data");
  req.resume();
  // The body ended (nothing unread is left to reset the connection with), or the client closed its side. The
  // sending side stays open meanwhile: a TLS client (Node's) ends its own side when it reads ours ending, and its
  // writes of the body then fail; the answer's length and `Connection: close` tell it the answer is whole.
  req.once("end", close);
  socket.once("end", close);
  socket.once("close", () => clearInterval(check));
}
