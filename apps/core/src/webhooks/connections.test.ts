import { eventually } from "@rms/test-db/testkit";
import { request as httpRequest } from "node:http";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startReceiver, testCertificate, type Receiver } from "../testutil/webhook-receiver.js";
import type { AddressPolicy } from "./address-policy.js";
import { ConnectionPool, EndpointConnections } from "./connections.js";
import { deliver, type DeliveryRequest } from "./deliver.js";
import type { Resolver } from "./pinned-lookup.js";
import { newEndpointSecret } from "@rms/webhook-signing";

const secret = newEndpointSecret();
const open: Array<{ close(): Promise<void> | void }> = [];

async function receiver(options: Parameters<typeof startReceiver>[0] = {}): Promise<Receiver> {
  const started = await startReceiver(options);
  open.push(started);
  return started;
}

function request(url: string, n = 1): DeliveryRequest {
  return { url, eventId: `evt_${n}`, body: JSON.stringify({ id: `evt_${n}`, object: "event" }), secrets: [secret] };
}

/** A resolver answering `hook.test` with whatever `table.address` holds at the time of each lookup. */
function movingResolver(table: { address: string }): Resolver {
  return async (hostname: string) => {
    if (hostname !== "hook.test") throw Object.assign(new Error(`no such host ${hostname}`), { code: "ENOTFOUND" });
    return [{ address: table.address, family: 4 as const }];
  };
}

/** Loopback allowed, except 127.0.0.2 (standing for an address the policy refuses). */
const allowLoopbackBut2: AddressPolicy = (address) => (address === "127.0.0.2" ? { allowed: false, range: "private" } : { allowed: true });

afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()));
});

describe("an endpoint's keep-alive connections", () => {
  it("carry one delivery after another over one connection, over HTTPS too (verified against the url's name)", async () => {
    const { cert, key } = await testCertificate({ dns: ["hook.test"] });
    const target = await receiver({ tls: { cert, key } });
    const connections = new EndpointConnections();
    open.push(connections);
    const options = { policy: allowLoopbackBut2, resolve: movingResolver({ address: "127.0.0.1" }), ca: cert, connections };
    for (let n = 1; n <= 3; n++) {
      expect(await deliver(request(target.url("/hook", "hook.test"), n), options)).toMatchObject({ status: "succeeded", responseStatus: 200 });
    }
    expect(target.deliveries).toHaveLength(3);
    expect(target.connections).toBe(1);
    // Without them each attempt opens (and closes) a connection of its own, as before.
    await deliver(request(target.url("/hook", "hook.test"), 4), { ...options, connections: undefined });
    expect(target.connections).toBe(2);
  });

  it(
    "check the address at every attempt: a name that now resolves to a refused " + "address is refused, though a connection to its last address is open",
    async () => {
      const target = await receiver();
      const table = { address: "127.0.0.1" };
      const connections = new EndpointConnections();
      open.push(connections);
      const options = { allowPrivate: true, policy: allowLoopbackBut2, resolve: movingResolver(table), connections };
      expect(await deliver(request(target.url("/hook", "hook.test")), options)).toMatchObject({ status: "succeeded" });
      table.address = "127.0.0.2";
      expect(await deliver(request(target.url("/hook", "hook.test"), 2), options)).toMatchObject({ status: "failed", error: "blocked_address" });
      expect(target.deliveries).toHaveLength(1);
      // Back to the address checked before: its connection is used again.
      table.address = "127.0.0.1";
      expect(await deliver(request(target.url("/hook", "hook.test"), 3), options)).toMatchObject({ status: "succeeded" });
      expect(target.connections).toBe(1);
    },
  );

  it("connect only to the address pinned to their agent, whatever lookup a request brings", async () => {
    const target = await receiver();
    const connections = new EndpointConnections();
    open.push(connections);
    const agent = connections.agentFor({ tls: false, host: "hook.test", port: target.port, address: { address: "127.0.0.1", family: 4 } });
    const status = await new Promise<number>((resolve, reject) => {
      const sent = httpRequest(
        {
          host: "hook.test",
          port: target.port,
          path: "/pinned",
          method: "POST",
          agent,
          // Would send the request elsewhere (nothing listens on 127.0.0.3 at that port): the agent's pin wins.
          lookup: (_hostname, _options, callback) => (callback as (error: null, address: string, family: number) => void)(null, "127.0.0.3", 4),
        },
        (response) => {
          response.resume();
          response.on("end", () => resolve(response.statusCode ?? 0));
        },
      );
      sent.on("error", reject);
      sent.end("{}");
    });
    expect(status).toBe(200);
    expect(target.deliveries.map((d) => d.url)).toEqual(["/pinned"]);
  });

  it("replace, once and before any answer, a kept connection that the receiver closed as the next request went out", async () => {
    // Answers the first request of each connection, then drops the connection when a second request arrives on it.
    let accepted = 0;
    let answered = 0;
    const server = createServer((socket: Socket) => {
      accepted++;
      let requests = 0;
      socket.on("data", () => {
        if (++requests > 1) return socket.destroy();
        answered++;
        socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok");
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    open.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    const { port } = server.address() as AddressInfo;
    const connections = new EndpointConnections();
    open.push(connections);
    const url = `http://127.0.0.1:${port}/hook`;
    expect(await deliver(request(url, 1), { allowPrivate: true, connections })).toMatchObject({ status: "succeeded" });
    expect(await deliver(request(url, 2), { allowPrivate: true, connections })).toMatchObject({ status: "succeeded", responseStatus: 200 });
    expect({ accepted, answered }).toEqual({ accepted: 2, answered: 2 });
  });
});

describe("a worker's connection pool", () => {
  it("closes an endpoint's connections once none of its flights has used them for the idle time, and keeps them while one does", async () => {
    const target = await receiver();
    const pool = new ConnectionPool(100);
    open.push(pool);
    const url = target.url();
    const first = pool.acquire("we_1");
    await deliver(request(url), { allowPrivate: true, connections: first });
    // A second flight of the same endpoint shares them; the first one's end closes nothing.
    const second = pool.acquire("we_1");
    expect(second).toBe(first);
    pool.release("we_1");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(target.closedConnections).toBe(0);
    await deliver(request(url, 2), { allowPrivate: true, connections: second });
    expect(target.connections).toBe(1);
    // The lane goes idle here: the last flight ends, and its connection is closed after the idle time.
    pool.release("we_1");
    await eventually(() => expect(target.closedConnections).toBe(1), { timeoutMs: 5_000 });
    expect(pool.size).toBe(0);
    // A later flight opens a connection afresh.
    await deliver(request(url, 3), { allowPrivate: true, connections: pool.acquire("we_1") });
    expect(target.connections).toBe(2);
    pool.release("we_1");
  });
});
