import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, type Stack } from "../testutil/harness.js";
import { addressBucket, normalizeIp } from "./client-address.js";
import { parseProxyHeader } from "./proxy-protocol.js";

// Issue 31, items 4 and 8 (CONTRACT.md section 8): client addresses are compared in one canonical form (an
// IPv4-mapped IPv6 address is its IPv4 address, whichever PROXY header spelled it), per-address limits count an
// IPv6 client by its /64, PROXY_PROTOCOL_PEERS is configured apart from TRUSTED_PROXIES, and on a connection that
// arrived through the PROXY protocol forwarded headers are ignored.

/** A version 2 PROXY header over TCP4 or TCP6 with the given 4 or 16 source bytes. */
function v2(source: number[]): Buffer {
  const six = source.length === 16;
  const body = Buffer.alloc(six ? 36 : 12);
  Buffer.from(source).copy(body, 0);
  Buffer.from(six ? [...Array(15).fill(0), 1] : [127, 0, 0, 1]).copy(body, six ? 16 : 4);
  body.writeUInt16BE(40_000, six ? 32 : 8);
  body.writeUInt16BE(8080, six ? 34 : 10);
  const head = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a, 0x21, six ? 0x21 : 0x11, 0, body.length]);
  return Buffer.concat([head, body]);
}
const mapped = (ipv4: string) => [...Array(10).fill(0), 0xff, 0xff, ...ipv4.split(".").map(Number)];
const v1 = (family: "TCP4" | "TCP6", source: string) => Buffer.from(`PROXY ${family} ${source} ${family === "TCP4" ? "127.0.0.1" : "::1"} 40000 8080\r\n`);

describe("one canonical form, IPv6 per /64", () => {
  it("spells an IPv4-mapped address as its IPv4 address and IPv6 in RFC 5952 form", () => {
    for (const spelling of ["203.0.113.9", "::ffff:203.0.113.9", "::FFFF:cb00:7109", "0:0:0:0:0:ffff:cb00:7109", "0000:0000:0000:0000:0000:ffff:203.0.113.9"]) {
      expect(normalizeIp(spelling), spelling).toBe("203.0.113.9");
    }
    expect(normalizeIp("2001:DB8:0:0:0:0:0:1")).toBe("2001:db8::1");
    expect(normalizeIp("2001:0db8::0001")).toBe("2001:db8::1");
  });

  it("counts an IPv6 address by its /64, an IPv4 address by itself", () => {
    expect(addressBucket("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(addressBucket("2001:DB8:1:2:bbbb:cccc:dddd:eeee")).toBe("2001:db8:1:2::/64");
    expect(addressBucket("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(addressBucket("::1")).toBe("::/64");
    expect(addressBucket("::ffff:203.0.113.9")).toBe("203.0.113.9");
  });

  it("reads the same client from PROXY v1 and v2, in either family", () => {
    const client = (data: Buffer) => (parseProxyHeader(data) as { client: { address: string } }).client.address;
    expect(client(v1("TCP4", "203.0.113.9"))).toBe("203.0.113.9");
    expect(client(v1("TCP6", "::ffff:203.0.113.9"))).toBe("203.0.113.9");
    expect(client(v1("TCP6", "::ffff:cb00:7109"))).toBe("203.0.113.9");
    expect(client(v2([203, 0, 113, 9]))).toBe("203.0.113.9");
    expect(client(v2(mapped("203.0.113.9")))).toBe("203.0.113.9");
    expect(client(v1("TCP6", "2001:DB8:0::1"))).toBe("2001:db8::1");
  });
});

/** Opens a connection to the plain listener, sends `header` then a request with `headers`; the answer, or null when closed unanswered. */
function exchange(port: number, header: Buffer, headers: Record<string, string> = {}): { socket: Socket; answer: Promise<string | null> } {
  const socket = connect(port, "127.0.0.1");
  let data = "";
  const answer = new Promise<string | null>((resolve) => {
    socket.on("data", (chunk) => {
      data += chunk.toString("latin1");
      if (data.includes("\r\n\r\n")) resolve(data);
    });
    socket.on("close", () => resolve(data === "" ? null : data));
    socket.on("error", () => resolve(null));
  });
  socket.on("connect", () => {
    const lines = Object.entries({ Host: "localhost", ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
    socket.write(Buffer.concat([header, Buffer.from(`GET /v1/status HTTP/1.1\r\n${lines.join("")}\r\n`)]));
  });
  return { socket, answer };
}

describe("through the gateway's listeners", () => {
  let stack: Stack;
  let port: number;
  const open: Socket[] = [];
  beforeAll(async () => {
    // HAProxy's place is 127.0.0.1 here: its PROXY headers are believed, and (for the last test) its forwarded headers too.
    stack = await startStack({ gateway: { proxyProtocolPeers: ["127.0.0.1"], trustedProxies: ["127.0.0.1"], maxConnectionsPerAddress: 2 } });
    port = stack.gateway.httpPort!;
  });
  afterAll(async () => {
    for (const socket of open) socket.destroy();
    await stack?.stop();
  });

  let probes = 0;
  /** A request from a client of its own, answered (403 on the plain listener) once every connection before it was read. */
  async function probe(): Promise<void> {
    const { socket, answer } = exchange(port, v1("TCP4", `192.0.2.${++probes}`));
    open.push(socket);
    expect(await answer).toMatch(/^HTTP\/1.1 403/);
  }

  /** A connection held open (its request never ends); true when it is still open once a probe has been answered after it. */
  async function hold(header: Buffer): Promise<boolean> {
    const socket = connect(port, "127.0.0.1");
    open.push(socket);
    let closed = false;
    socket.on("close", () => {
      closed = true;
    });
    socket.on("error", () => undefined);
    await new Promise<void>((resolve) => socket.on("connect", () => resolve()));
    socket.write(Buffer.concat([header, Buffer.from("GET /v1/status HTTP/1.1\r\nHost: localhost\r\n")]));
    await probe();
    return !closed;
  }

  it("counts one IPv4 client however the PROXY header spelled it: v1 mapped, v2 mapped, then v2 IPv4 is over the limit of 2", async () => {
    expect(await hold(v1("TCP6", "::ffff:198.51.100.20"))).toBe(true);
    expect(await hold(v2(mapped("198.51.100.20")))).toBe(true);
    expect(await hold(v2([198, 51, 100, 20]))).toBe(false);
    expect(await hold(v1("TCP4", "198.51.100.20"))).toBe(false);
    // Another client is not affected.
    expect(await hold(v1("TCP4", "198.51.100.21"))).toBe(true);
  });

  it("counts IPv6 clients per /64: a third address of the same /64 is refused, another /64 is not", async () => {
    expect(await hold(v1("TCP6", "2001:db8:7:1::a"))).toBe(true);
    expect(await hold(v2([0x20, 0x01, 0x0d, 0xb8, 0, 7, 0, 1, 0xbe, 0xef, 0, 0, 0, 0, 0, 0x0b]))).toBe(true);
    expect(await hold(v1("TCP6", "2001:db8:7:1:ffff:ffff:ffff:ffff"))).toBe(false);
    expect(await hold(v1("TCP6", "2001:db8:7:2::a"))).toBe(true);
  });

  it("ignores forwarded headers on a PROXY connection: X-Forwarded-Proto: https over plain HTTP is still refused", async () => {
    // Even when the header names an address that is itself a trusted proxy: what the PROXY header said is final.
    const { socket, answer } = exchange(port, v1("TCP4", "127.0.0.1"), { "X-Forwarded-Proto": "https", "X-Forwarded-For": "192.0.2.45", Connection: "close" });
    open.push(socket);
    const text = await answer;
    expect(text).toMatch(/^HTTP\/1.1 403/);
    expect(text).toContain("https_required");
    // Without a PROXY header the same proxy (a TRUSTED_PROXIES member) is believed: its request counts as HTTPS.
    const direct = exchange(port, Buffer.alloc(0), { "X-Forwarded-Proto": "https", "X-Forwarded-For": "192.0.2.45", Connection: "close" });
    open.push(direct.socket);
    expect(await direct.answer).toMatch(/^HTTP\/1.1 200/);
  });
});

describe("PROXY_PROTOCOL_PEERS apart from TRUSTED_PROXIES", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ gateway: { trustedProxies: ["127.0.0.1"], proxyProtocolPeers: [] } });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it("a trusted proxy that is not a PROXY peer cannot name a client with a PROXY header: its bytes are not HTTP", async () => {
    const { socket, answer } = exchange(stack.gateway.httpPort!, v1("TCP4", "203.0.113.77"), { Connection: "close" });
    const text = await answer;
    socket.destroy();
    expect(text).toMatch(/^HTTP\/1.1 400/);
  });
});
