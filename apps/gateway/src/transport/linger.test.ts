import { createServer, type Server } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { lingerOnEarlyClose } from "./linger.js";

// The lingering close's bounds, on a plain HTTP server that refuses every request before reading its body.

const LIMITS = { maxMs: 60_000, idleMs: 300, maxBytes: 2 * 1024 * 1024, checkEveryMs: 20 };
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function refusingServer(): Promise<{ port: number; read: () => number }> {
  let lastSocket: Socket | undefined;
  const server = createServer((req, res) => {
    lastSocket = req.socket;
    res.setHeader("Connection", "close");
    const body = '{"error":{"code":"refused"}}';
    res.writeHead(400, { "Content-Type": "application/json", "Content-Length": String(body.length) }).end(body);
  });
  lingerOnEarlyClose(server, LIMITS);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, read: () => lastSocket?.bytesRead ?? 0 };
}

/** Sends a request head announcing `length` bytes, then `send(socket)`; answers what was received and when the server closed. */
function client(port: number, length: number) {
  const socket = connect(port, "127.0.0.1");
  let received = "";
  socket.on("data", (piece: Buffer) => (received += piece.toString()));
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.write(`POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n`);
  return { socket, closed, received: () => received };
}

describe("lingering close", () => {
  it("a client that keeps sending is read past the answer, then cut at the byte bound; the answer reached it whole", async () => {
    const { port, read } = await refusingServer();
    const c = client(port, 100 * 1024 * 1024);
    const piece = Buffer.alloc(64 * 1024);
    let sent = 0;
    let open = true;
    void c.closed.then(() => (open = false));
    while (open && sent < 100 * 1024 * 1024) {
      if (!c.socket.write(piece)) await new Promise((resolve) => c.socket.once("drain", resolve).once("close", resolve));
      sent += piece.length;
    }
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 400 /);
    expect(c.received()).toContain('{"error":{"code":"refused"}}');
    // Read and dropped well past the answer, but not the 100 MB announced: the bound cut it.
    console.log(`lingering close: ${read()} bytes read of ${sent} sent before the cut (bound ${LIMITS.maxBytes})`);
    expect(read()).toBeGreaterThan(LIMITS.maxBytes);
    expect(read()).toBeLessThan(100 * 1024 * 1024);
  });

  it("a client that stops sending is closed once idle; one that ends its body is closed then, with nothing unread", async () => {
    const { port } = await refusingServer();
    const idle = client(port, 1_000_000);
    idle.socket.write(Buffer.alloc(10_000));
    await idle.closed;
    expect(idle.received()).toContain('{"error":{"code":"refused"}}');

    const whole = client(port, 50_000);
    whole.socket.write(Buffer.alloc(50_000));
    await whole.closed;
    expect(whole.received()).toContain('{"error":{"code":"refused"}}');
  });
});
