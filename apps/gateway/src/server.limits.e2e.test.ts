import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls, type TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SERVER_LIMITS } from "./server.js";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";

/**
 * Bad clients: one that sends its headers a byte at a time and never finishes,
 * one that opens a TCP connection and never starts TLS, one that completes TLS
 * and never sends a request. Each is cut off by the server's timeouts while
 * other clients keep being served. Waits are bounded generously; no timing is asserted.
 */
let t: Stack;
let key: string;
beforeAll(async () => {
  t = await startStack();
  ({ key } = await withSecretKey(t));
});
afterAll(() => t?.stop());

const CUT_OFF_WITHIN_MS = SERVER_LIMITS.requestTimeoutMs + 15_000;

function closed(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed) resolve();
    socket.once("close", () => resolve());
  });
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} still open after ${ms} ms`)), ms))]);
}

describe("slow and abandoned connections", () => {
  it(
    "cuts off a slow-headers client, an idle TCP connection and an idle TLS connection, and serves others meanwhile",
    async () => {
      const port = t.gateway.httpsPort;
      // Never starts TLS.
      const idleTcp = connectTcp({ host: "127.0.0.1", port });
      idleTcp.on("error", () => undefined);
      // TLS done, never a request.
      const idleTls: TLSSocket = connectTls({ host: "127.0.0.1", port, ca: t.gateway.certificate, servername: "localhost" });
      idleTls.on("error", () => undefined);
      // Headers one byte at a time, never finished.
      const slow: TLSSocket = connectTls({ host: "127.0.0.1", port, ca: t.gateway.certificate, servername: "localhost" });
      slow.on("error", () => undefined);
      await new Promise<void>((resolve, reject) => slow.once("secureConnect", resolve).once("error", reject));
      const header = "GET /v1/resources HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + "a".repeat(1_000);
      let sent = 0;
      const drip = setInterval(() => {
        if (slow.destroyed || sent >= header.length) return;
        slow.write(header[sent++]!);
      }, 200);

      try {
        const served = [];
        // Other clients are served while the bad ones hang on.
        for (let i = 0; i < 5; i++) {
          const response = await t.api.get("/v1/resources", { key });
          served.push(response.status);
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
        expect(served).toEqual([200, 200, 200, 200, 200]);

        await within(closed(slow), CUT_OFF_WITHIN_MS, "slow-headers connection");
        await within(closed(idleTcp), CUT_OFF_WITHIN_MS, "idle TCP connection");
        await within(closed(idleTls), CUT_OFF_WITHIN_MS, "idle TLS connection");
        expect(sent).toBeLessThan(header.length); // cut off before it could finish its headers
        expect((await t.api.get("/v1/resources", { key })).status).toBe(200);
      } finally {
        clearInterval(drip);
        for (const socket of [idleTcp, idleTls, slow]) socket.destroy();
      }
    },
    CUT_OFF_WITHIN_MS * 2,
  );
});
