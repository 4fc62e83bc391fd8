import { mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { connect, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { developmentCertificate } from "./tls.js";
import { acceptProxyProtocol, parseProxyHeader } from "./proxy-protocol.js";

/** A version 2 header: PROXY (or LOCAL) over TCP4, source and destination as given. */
function v2(command: "PROXY" | "LOCAL", source = "203.0.113.9", sourcePort = 40_000): Buffer {
  const body = Buffer.alloc(12);
  Buffer.from(source.split(".").map(Number)).copy(body, 0);
  Buffer.from([127, 0, 0, 1]).copy(body, 4);
  body.writeUInt16BE(sourcePort, 8);
  body.writeUInt16BE(443, 10);
  const head = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a, command === "PROXY" ? 0x21 : 0x20, 0x11, 0, 12]);
  return Buffer.concat([head, body]);
}

describe("parseProxyHeader", () => {
  it("reads version 1 and 2 headers, asks for more bytes while undecided, and tells other bytes apart at once", () => {
    expect(parseProxyHeader(Buffer.from("PROXY TCP4 203.0.113.9 127.0.0.1 40000 443\r\nGET"))).toEqual({
      kind: "header",
      length: 44,
      client: { address: "203.0.113.9", port: 40_000 },
    });
    expect(parseProxyHeader(Buffer.from("PROXY TCP6 2001:db8::1 ::1 40000 443\r\n"))).toMatchObject({ client: { address: "2001:db8::1" } });
    expect(parseProxyHeader(Buffer.from("PROXY UNKNOWN\r\n"))).toEqual({ kind: "header", length: 15, client: null });
    expect(parseProxyHeader(Buffer.from("PROXY TCP4 203.0.113.9 127.0.0.1 400"))).toEqual({ kind: "more" });
    expect(parseProxyHeader(Buffer.from("PRO"))).toEqual({ kind: "more" });
    expect(parseProxyHeader(v2("PROXY"))).toEqual({ kind: "header", length: 28, client: { address: "203.0.113.9", port: 40_000 } });
    expect(parseProxyHeader(v2("LOCAL"))).toEqual({ kind: "header", length: 28, client: null });
    expect(parseProxyHeader(v2("PROXY").subarray(0, 20))).toEqual({ kind: "more" });
    // A TLS ClientHello and an HTTP request are not headers.
    expect(parseProxyHeader(Buffer.from([0x16, 0x03, 0x01]))).toEqual({ kind: "none" });
    expect(parseProxyHeader(Buffer.from("GET / HTTP/1.1\r\n"))).toEqual({ kind: "none" });
    // A header that lies about its addresses, or never ends, is refused.
    expect(parseProxyHeader(Buffer.from("PROXY TCP4 not-an-ip 127.0.0.1 1 2\r\n"))).toEqual({ kind: "invalid" });
    expect(parseProxyHeader(Buffer.from("PROXY TCP4 203.0.113.9 127.0.0.1 99999 443\r\n"))).toEqual({ kind: "invalid" });
    expect(parseProxyHeader(Buffer.from(`PROXY ${"x".repeat(120)}`))).toEqual({ kind: "invalid" });
  });
});

describe("acceptProxyProtocol", () => {
  const dir = mkdtempSync(join(tmpdir(), "rms-proxy-"));
  const servers: Server[] = [];
  let httpsPort = 0;
  let httpPort = 0;
  /** Answers the peer the server sees. */
  const handler = (req: IncomingMessage, res: ServerResponse) => res.end(`${req.socket.remoteAddress} ${req.socket.remotePort}`);
  /** The proxy is 127.0.0.2 (loopback answers on all of 127/8); the client without a proxy is 127.0.0.1. */
  const trusted = new Set(["127.0.0.2"]);

  const listen = (server: Server) =>
    new Promise<number>((resolve) => {
      servers.push(server);
      server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
    });
  beforeAll(async () => {
    const tls = await developmentCertificate(dir);
    const https = createHttpsServer({ cert: tls.cert, key: tls.key }, handler);
    const http = createHttpServer(handler);
    acceptProxyProtocol(https, trusted);
    acceptProxyProtocol(http, trusted);
    httpsPort = await listen(https);
    httpPort = await listen(http);
  });
  afterAll(() => {
    for (const server of servers) server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Connects from `from`, writes `header` (byte by byte when `split`), then one request; answers the body, or "closed". */
  function ask(port: number, options: { from: string; header?: Buffer; tls: boolean; split?: boolean }): Promise<string> {
    return new Promise((resolve) => {
      const raw = connect({ port, host: "127.0.0.1", localAddress: options.from }, async () => {
        if (options.header) {
          for (const piece of options.split ? [...options.header].map((b) => Buffer.from([b])) : [options.header]) {
            raw.write(piece);
            if (options.split) await new Promise((r) => setTimeout(r, 2));
          }
        }
        const socket: Socket = options.tls ? tlsConnect({ socket: raw, rejectUnauthorized: false, servername: "localhost" }) : raw;
        let reply = "";
        socket.on("data", (d) => (reply += d));
        socket.on("error", () => resolve("closed"));
        socket.on("close", () => resolve(reply ? reply.split("\r\n\r\n")[1]! : "closed"));
        socket.write("GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
      });
      raw.on("error", () => resolve("closed"));
    });
  }

  it("takes the client's address from a trusted proxy's header, over TLS and plain HTTP, version 1 and 2, whole or in pieces", async () => {
    const v1 = Buffer.from("PROXY TCP4 203.0.113.9 127.0.0.1 40000 443\r\n");
    expect(await ask(httpsPort, { from: "127.0.0.2", header: v1, tls: true })).toBe("203.0.113.9 40000");
    expect(await ask(httpsPort, { from: "127.0.0.2", header: v2("PROXY", "198.51.100.4", 5_000), tls: true })).toBe("198.51.100.4 5000");
    expect(await ask(httpPort, { from: "127.0.0.2", header: v2("PROXY"), tls: false })).toBe("203.0.113.9 40000");
    expect(await ask(httpsPort, { from: "127.0.0.2", header: v2("PROXY"), tls: true, split: true })).toBe("203.0.113.9 40000");
    expect(await ask(httpPort, { from: "127.0.0.2", header: v1, tls: false, split: true })).toBe("203.0.113.9 40000");
  });

  it("keeps the proxy as the peer for LOCAL (its health checks) and for a connection without a header", async () => {
    expect(await ask(httpsPort, { from: "127.0.0.2", header: v2("LOCAL"), tls: true })).toMatch(/^127\.0\.0\.2 \d+$/);
    expect(await ask(httpsPort, { from: "127.0.0.2", tls: true })).toMatch(/^127\.0\.0\.2 \d+$/);
    expect(await ask(httpPort, { from: "127.0.0.2", tls: false })).toMatch(/^127\.0\.0\.2 \d+$/);
  });

  it("never reads a header from anyone else, and drops a trusted peer's malformed one", async () => {
    const forged = Buffer.from("PROXY TCP4 203.0.113.9 127.0.0.1 40000 443\r\n");
    // Over TLS the header is garbage before the handshake: no answer at all.
    expect(await ask(httpsPort, { from: "127.0.0.1", header: forged, tls: true })).toBe("closed");
    // Over HTTP it is a malformed request line: refused, and never taken for an address.
    expect(await ask(httpPort, { from: "127.0.0.1", header: forged, tls: false })).not.toContain("203.0.113.9");
    expect(await ask(httpsPort, { from: "127.0.0.2", header: Buffer.from("PROXY TCP4 bad 127.0.0.1 1 2\r\n"), tls: true })).toBe("closed");
  });
});
