import type { Server as HttpServer } from "node:http";
import type { Server, Socket } from "node:net";
import { readFirstBytes } from "../transport/first-bytes.js";

/**
 * Plain HTTP sent to the HTTPS port (CONTRACT.md section 1, "Plain HTTP"): a key that arrives so is as
 * compromised as one sent to the plain listener. The first bytes of each HTTPS connection are looked at before TLS
 * sees them: a TLS record starts with its content type (22, a handshake); anything else is handed, bytes untouched,
 * to `plain`, an HTTP server of the same app that is never bound to a port and answers as the plain listener does
 * (its keys revoked, 403 `https_required`, malformed requests scanned too). TLS alone would refuse the bytes
 * (`ERR_SSL_HTTP_REQUEST`) and close the connection with the key still valid.
 *
 * Call it right after creating the HTTPS server, before any other `connection` listener is attached: it wraps the
 * server's own (TLS) listeners only, so the connection cap and the PROXY protocol still see the connection first.
 */
export function divertPlainHttp(https: Server, plain: HttpServer, timeoutMs: number): void {
  const tls = https.listeners("connection") as ((socket: Socket) => void)[];
  https.removeAllListeners("connection");
  https.on("connection", (socket: Socket) => {
    readFirstBytes(socket, timeoutMs, (received) => () => {
      socket.unshift(received);
      if (received[0] === 0x16) for (const listener of tls) listener.call(https, socket);
      else plain.emit("connection", socket);
    });
  });
}
