import { request as httpsRequest } from "node:https";
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MAX_CONNECTIONS_PER_ADDRESS } from "../config.js";
import { SERVER_LIMITS } from "../server.js";
import { startStack, type Stack } from "../testutil/harness.js";
import { plainRequest } from "../testutil/raw.js";
import { ConnectionLimit } from "./connection-limit.js";

// CONTRACT.md section 8: at most 256 open connections per client address; further ones closed at once.
// 127.0.0.1 and 127.0.0.2 are two client addresses on this machine (Linux routes all of 127/8 to loopback).

interface Opened {
  readonly socket: Socket;
  readonly closed: Promise<number>;
}

/** A TCP connection from `localAddress` that sends nothing; `closed` resolves with the ms from connect to close. */
function idleConnection(port: number, localAddress: string): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, localAddress });
    socket.on("error", () => undefined);
    let connectedAt = 0;
    const closed = new Promise<number>((done) => socket.once("close", () => done(Date.now() - connectedAt)));
    socket.once("connect", () => {
      connectedAt = Date.now();
      resolve({ socket, closed });
    });
    socket.once("close", () => (connectedAt === 0 ? reject(new Error("closed before connecting")) : undefined));
  });
}

/** Resolves true once the socket has closed, false if it is still open after `ms`. */
function closedWithin(opened: Opened, ms: number): Promise<boolean> {
  return Promise.race([opened.closed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
}

function statusOver(port: number, ca: string, localAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: "127.0.0.1", port, path: "/v1/status", ca, localAddress, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("open connections per client address (end to end)", () => {
  let t: Stack;
  beforeAll(async () => {
    t = await startStack();
  });
  afterAll(() => t?.stop());

  it(
    "300 idle connections from one address: 256 kept, 44 closed at once, another address served; the idle ones time out and the address is served again",
    async () => {
      const port = t.gateway.httpsPort;
      const limit = DEFAULT_MAX_CONNECTIONS_PER_ADDRESS;
      const opened: Opened[] = [];
      try {
        for (let i = 0; i < 300; i++) opened.push(await idleConnection(port, "127.0.0.1"));
        // The ones over the limit close without waiting for any timeout (the 10 s handshake timeout is the first).
        const closedAtOnce = await Promise.all(opened.map((o) => closedWithin(o, SERVER_LIMITS.handshakeTimeoutMs / 4)));
        const refused = closedAtOnce.filter(Boolean).length;
        const refusedAfterMs = await Promise.all(opened.filter((_, i) => closedAtOnce[i]).map((o) => o.closed));
        console.log(`300 idle connections from 127.0.0.1: ${refused} closed at once (slowest after ${Math.max(...refusedAfterMs)} ms), ${300 - refused} open`);
        expect(refused).toBe(300 - limit);

        // Another address is served, over HTTPS and on the plain listener; this one is refused on both (one count).
        expect(await statusOver(port, t.gateway.certificate, "127.0.0.2")).toBe(200);
        expect((await plainRequest(t.gateway.httpPort!, { path: "/v1/status", localAddress: "127.0.0.2" })).status).toBe(403);
        await expect(statusOver(port, t.gateway.certificate, "127.0.0.1")).rejects.toThrow();
        await expect(plainRequest(t.gateway.httpPort!, { path: "/v1/status", localAddress: "127.0.0.1" })).rejects.toThrow();

        // Abandoned connections are closed by the server itself (TLS never started: the handshake timeout).
        const started = Date.now();
        await Promise.all(opened.map((o) => o.closed));
        console.log(`the ${limit} kept idle connections were all closed by the server after ${Date.now() - started} ms more`);
        await eventually(async () => expect(await statusOver(port, t.gateway.certificate, "127.0.0.1")).toBe(200), { timeoutMs: 10_000, intervalMs: 200 });
      } finally {
        for (const o of opened) o.socket.destroy();
      }
    },
    SERVER_LIMITS.handshakeTimeoutMs + 60_000,
  );
});

describe("ConnectionLimit", () => {
  let server: Server;
  let port: number;
  const limit = new ConnectionLimit(2, new Set(["127.0.0.3"]));
  beforeAll(async () => {
    server = createServer(() => undefined);
    limit.attach(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("does not count a trusted proxy's connections, counts others per address, and frees a place when one closes", async () => {
    const proxy = await Promise.all([1, 2, 3, 4].map(() => idleConnection(port, "127.0.0.3")));
    const client = await Promise.all([1, 2, 3].map(() => idleConnection(port, "127.0.0.2")));
    try {
      const settled = (list: Opened[]) => Promise.all(list.map((o) => closedWithin(o, 1_000)));
      expect(await settled(proxy)).toEqual([false, false, false, false]);
      expect((await settled(client)).filter(Boolean)).toHaveLength(1);
      expect(limit.openFrom("127.0.0.2")).toBe(2);
      expect(limit.openFrom("127.0.0.3")).toBe(0);
      expect(limit.refused).toBe(1);
      const open = client.filter((o) => !o.socket.destroyed);
      open[0]!.socket.destroy();
      await eventually(() => expect(limit.openFrom("::ffff:127.0.0.2")).toBe(1));
      const again = await idleConnection(port, "127.0.0.2");
      expect(await closedWithin(again, 1_000)).toBe(false);
      again.socket.destroy();
    } finally {
      for (const o of [...proxy, ...client]) o.socket.destroy();
    }
  });
});
