import { freePort } from "@rms/test-db";
import { eventually } from "@rms/test-db/testkit";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { startReceiver, testCertificate, type Receiver, type ReceivedDelivery } from "../testutil/webhook-receiver.js";
import type { AddressPolicy } from "./address-policy.js";
import { deliver, RESPONSE_BODY_CAP_BYTES, WEBHOOK_USER_AGENT, type DeliveryRequest } from "./deliver.js";
import type { Resolver } from "./pinned-lookup.js";
import { newEndpointSecret } from "@rms/webhook-signing";

const secret = newEndpointSecret();
const event = { id: "evt_0000000000000000000001", object: "event", type: "resource.created", data: { object: { id: "res_1", name: "ünïcode ✓" } } };
const open: Array<{ close(): Promise<void> | void }> = [];
const loopback = { allowPrivate: true };

async function receiver(options: Parameters<typeof startReceiver>[0] = {}): Promise<Receiver> {
  const started = await startReceiver(options);
  open.push(started);
  return started;
}

function request(url: string, secrets = [secret]): DeliveryRequest {
  return { url, eventId: event.id, body: JSON.stringify(event), secrets };
}

/** What a receiver does: verify the delivery with the Standard Webhooks library. */
function verifyWith(secretText: string, delivery: ReceivedDelivery): unknown {
  return new Webhook(secretText).verify(delivery.body, delivery.headers as Record<string, string>);
}

/** A resolver that answers from a table and counts its calls. */
function tableResolver(table: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (hostname: string) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`no such host ${hostname}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? (6 as const) : (4 as const) }));
  };
  return Object.assign(resolve, { calls });
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()));
});

describe("deliver over HTTP", () => {
  it("POSTs the event with Standard Webhooks headers that the library verifies", async () => {
    const target = await receiver();
    const calledAt = performance.now();
    const outcome = await deliver(request(target.url("/hook?x=1")), loopback);
    const wallMs = performance.now() - calledAt;

    expect(outcome).toMatchObject({
      status: "succeeded",
      responseStatus: 200,
      responseBody: "ok",
      error: null,
      disableEndpoint: false,
      retryAfterSeconds: null,
    });
    // The attempt's duration lies within the time the call took, as measured around it.
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
    expect(outcome.durationMs).toBeLessThanOrEqual(Math.ceil(wallMs));
    expect(target.deliveries).toHaveLength(1);
    const [delivery] = target.deliveries as [ReceivedDelivery];
    expect(delivery.method).toBe("POST");
    expect(delivery.url).toBe("/hook?x=1");
    expect(delivery.headers["content-type"]).toBe("application/json");
    expect(delivery.headers["user-agent"]).toBe(WEBHOOK_USER_AGENT);
    expect(delivery.headers["webhook-id"]).toBe(event.id);
    expect(delivery.headers["webhook-timestamp"]).toBe(String(outcome.timestamp));
    expect(delivery.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(verifyWith(secret, delivery)).toEqual(event);
  });

  it("a delivery does not verify under another secret, nor with its body changed", async () => {
    const target = await receiver();
    await deliver(request(target.url()), loopback);
    const [delivery] = target.deliveries as [ReceivedDelivery];
    expect(() => verifyWith(newEndpointSecret(), delivery)).toThrow(/No matching signature/);
    expect(() => verifyWith(secret, { ...delivery, body: delivery.body.replace("res_1", "res_2") })).toThrow(/No matching signature/);
  });

  it("during a rotation's grace period sends one signature per secret, and each secret verifies alone", async () => {
    const target = await receiver();
    const newer = newEndpointSecret();
    await deliver(request(target.url(), [newer, secret]), loopback);
    const [delivery] = target.deliveries as [ReceivedDelivery];
    expect(String(delivery.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(verifyWith(newer, delivery)).toEqual(event);
    expect(verifyWith(secret, delivery)).toEqual(event);
    expect(() => verifyWith(newEndpointSecret(), delivery)).toThrow();

    // After the grace period only the new secret signs: the old one no longer verifies.
    await deliver(request(target.url(), [newer]), loopback);
    const after = target.deliveries[1]!;
    expect(verifyWith(newer, after)).toEqual(event);
    expect(() => verifyWith(secret, after)).toThrow(/No matching signature/);
  });

  it.each([
    [204, "succeeded", null],
    [299, "succeeded", null],
    [400, "failed", "http_error"],
    [500, "failed", "http_error"],
  ] as const)("answers %i count as %s", async (status, verdict, error) => {
    const target = await receiver({ handler: (_q, response) => response.writeHead(status).end(status === 204 ? undefined : "body") });
    expect(await deliver(request(target.url()), loopback)).toMatchObject({ status: verdict, error, responseStatus: status });
  });

  it("does not follow redirects, even to a permitted receiver: a 3xx is a failure with error redirect", async () => {
    const second = await receiver();
    for (const status of [301, 302, 303, 307, 308]) {
      const target = await receiver({ handler: (_q, response) => response.writeHead(status, { location: second.url("/elsewhere") }).end() });
      expect(await deliver(request(target.url()), loopback)).toMatchObject({ status: "failed", error: "redirect", responseStatus: status });
    }
    expect(second.connections).toBe(0);
  });

  it("does not follow a redirect to a blocked address", async () => {
    const target = await receiver({ handler: (_q, response) => response.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" }).end() });
    const resolve = tableResolver({ "hooks.test": ["127.0.0.1"] });
    const outcome = await deliver(request(target.url("/hook", "hooks.test")), { allowPrivate: true, resolve });
    expect(outcome).toMatchObject({ status: "failed", error: "redirect", responseStatus: 302 });
    expect(resolve.calls).toEqual(["hooks.test"]);
  });

  it("410 asks for the endpoint to be disabled", async () => {
    const target = await receiver({ handler: (_q, response) => response.writeHead(410).end("gone") });
    expect(await deliver(request(target.url()), loopback)).toMatchObject({
      status: "failed",
      error: "http_error",
      responseStatus: 410,
      disableEndpoint: true,
      responseBody: "gone",
    });
  });

  it("429 and 503 carry Retry-After in seconds or as an HTTP-date; other statuses do not", async () => {
    const nowMs = Date.UTC(2026, 0, 1, 12, 0, 0);
    const answers: Array<[number, string]> = [
      [429, "30"],
      [503, new Date(nowMs + 120_000).toUTCString()],
      [503, new Date(nowMs - 120_000).toUTCString()],
      [429, "soon"],
      [500, "30"],
    ];
    const results = [];
    for (const [status, retryAfter] of answers) {
      const target = await receiver({ handler: (_q, response) => response.writeHead(status, { "retry-after": retryAfter }).end() });
      results.push((await deliver(request(target.url()), { ...loopback, now: () => nowMs })).retryAfterSeconds);
    }
    expect(results).toEqual([30, 120, 0, null, null]);
    const plain = await receiver({ handler: (_q, response) => response.writeHead(429).end() });
    expect(await deliver(request(plain.url()), loopback)).toMatchObject({ error: "http_error", responseStatus: 429, retryAfterSeconds: null });
  });

  it("keeps only the first KiB of the response body and drops the connection after it", async () => {
    const big = "é".repeat(3000); // 6000 bytes; the cut falls inside no character since 1024 is even
    const target = await receiver({ handler: (_q, response) => response.writeHead(500).end(big) });
    const outcome = await deliver(request(target.url()), loopback);
    expect(outcome.responseBody).toBe("é".repeat(RESPONSE_BODY_CAP_BYTES / 2));
  });

  it("an endless fast body ends the attempt after 1 KiB, with the socket dropped", async () => {
    let serverSawClose = false;
    const target = await receiver({
      handler: (_q, response) => {
        response.writeHead(200);
        const pump = setInterval(() => response.write("x".repeat(256)), 1);
        response.on("close", () => {
          serverSawClose = true;
          clearInterval(pump);
        });
      },
    });
    const outcome = await deliver(request(target.url()), { ...loopback, timeoutMs: 10_000 });
    expect(outcome).toMatchObject({ status: "succeeded", responseStatus: 200, error: null });
    expect(outcome.responseBody).toBe("x".repeat(RESPONSE_BODY_CAP_BYTES));
    await eventually(() => expect(serverSawClose).toBe(true));
  });
});

describe("deliver: timeouts and transport failures", () => {
  it("times out on a receiver that never answers", async () => {
    const target = await receiver({ handler: () => {} });
    const outcome = await deliver(request(target.url()), { ...loopback, timeoutMs: 300 });
    expect(outcome).toMatchObject({ status: "failed", error: "timeout", responseStatus: null, responseBody: null });
    expect(target.deliveries).toHaveLength(1);
    await eventually(() => expect(target.closedConnections).toBe(1));
  });

  it("times out on a 2xx whose body trickles without end, keeping what came", async () => {
    const target = await receiver({
      handler: (_q, response) => {
        response.writeHead(200);
        response.write("a");
        const drip = setInterval(() => response.write("a"), 50);
        response.on("close", () => clearInterval(drip));
      },
    });
    const outcome = await deliver(request(target.url()), { ...loopback, timeoutMs: 1000 });
    expect(outcome).toMatchObject({ status: "failed", error: "timeout", responseStatus: 200 });
    expect(outcome.responseBody).toMatch(/^a+$/);
    await eventually(() => expect(target.closedConnections).toBe(1));
  });

  it("times out while the resolver hangs", async () => {
    const outcome = await deliver(request("https://hooks.test/"), { resolve: () => new Promise(() => {}), timeoutMs: 200 });
    expect(outcome).toMatchObject({ status: "failed", error: "timeout" });
  });

  it("reports a refused connection as connection_failed", async () => {
    const port = await freePort();
    expect(await deliver(request(`http://127.0.0.1:${port}/hook`), loopback)).toMatchObject({
      status: "failed",
      error: "connection_failed",
      responseStatus: null,
      detail: "ECONNREFUSED",
    });
  });

  it("reports a connection closed before any answer as connection_failed", async () => {
    const raw = createServer((socket) => socket.once("data", () => socket.destroy()));
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    open.push({ close: () => new Promise<void>((resolve) => raw.close(() => resolve())) });
    const outcome = await deliver(request(`http://127.0.0.1:${(raw.address() as AddressInfo).port}/`), loopback);
    expect(outcome).toMatchObject({ status: "failed", error: "connection_failed" });
  });

  it("reports a garbled answer as invalid_response", async () => {
    const raw = createServer((socket) => socket.once("data", () => socket.end("this is not HTTP\r\n\r\n")));
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    open.push({ close: () => new Promise<void>((resolve) => raw.close(() => resolve())) });
    const outcome = await deliver(request(`http://127.0.0.1:${(raw.address() as AddressInfo).port}/`), loopback);
    expect(outcome).toMatchObject({ status: "failed", error: "invalid_response" });
  });

  it("reports a name that does not resolve as dns_failed", async () => {
    const resolve = tableResolver({});
    expect(await deliver(request("https://nowhere.test/"), { resolve })).toMatchObject({ status: "failed", error: "dns_failed", detail: "ENOTFOUND" });
  });

  it("refuses urls it must not deliver to as invalid_url", async () => {
    expect(await deliver(request("http://hooks.example.com/"))).toMatchObject({ error: "invalid_url" });
    expect(await deliver(request("ftp://127.0.0.1/"), loopback)).toMatchObject({ error: "invalid_url" });
    expect(await deliver(request("https://u:p@hooks.example.com/"))).toMatchObject({ error: "invalid_url" });
    expect(await deliver(request("nonsense"))).toMatchObject({ error: "invalid_url" });
  });
});

describe("deliver: SSRF protection on the address connected to", () => {
  it("refuses a literal blocked address without connecting to it", async () => {
    const target = await receiver();
    const literal = await deliver(request(`https://127.0.0.1:${target.port}/hook`));
    expect(literal).toMatchObject({ status: "failed", error: "blocked_address", responseStatus: null, detail: "127.0.0.1 is loopback" });
    expect(target.connections).toBe(0);
  });

  it.each([
    [["10.0.0.1"], "10.0.0.1 is private"],
    [["127.0.0.1"], "127.0.0.1 is loopback"],
    [["169.254.169.254"], "169.254.169.254 is metadata"],
    [["::ffff:7f00:1"], "::ffff:7f00:1 is loopback (via ipv4_mapped)"],
    [["64:ff9b::a9fe:a9fe"], "64:ff9b::a9fe:a9fe is metadata (via nat64)"],
    [["8.8.8.8", "192.168.1.1"], "192.168.1.1 is private"], // one private address among public ones refuses the name
  ])("refuses a name resolving to %j with blocked_address", async (addresses, detail) => {
    const resolve = tableResolver({ "hooks.test": addresses });
    const outcome = await deliver(request("https://hooks.test/hook"), { resolve });
    expect(outcome).toMatchObject({ status: "failed", error: "blocked_address", responseStatus: null, detail });
  });

  it("resolves once and connects to exactly that address (no second lookup, so no DNS rebinding)", async () => {
    const target = await receiver();
    const calls: string[] = [];
    // The first answer is the permitted address, every later one the forbidden: a second lookup would be caught.
    const rebinding: Resolver = async (hostname) => {
      calls.push(hostname);
      return [{ address: calls.length === 1 ? "127.0.0.1" : "127.0.0.2", family: 4 }];
    };
    const onlyFirst: AddressPolicy = (address) => (address === "127.0.0.1" ? { allowed: true } : { allowed: false, range: "loopback" });
    const outcome = await deliver(request(target.url("/hook", "rebind.test")), { allowPrivate: true, policy: onlyFirst, resolve: rebinding });
    expect(outcome).toMatchObject({ status: "succeeded", responseStatus: 200 });
    expect(calls).toEqual(["rebind.test"]);
    expect(target.deliveries[0]!.headers.host).toBe(`rebind.test:${target.port}`);
  });

  it("WEBHOOK_ALLOW_PRIVATE lifts the policy for names too", async () => {
    const target = await receiver();
    const resolve = tableResolver({ "hooks.test": ["127.0.0.1"] });
    expect(await deliver(request(target.url("/hook", "hooks.test")), { allowPrivate: true, resolve })).toMatchObject({ status: "succeeded" });
    expect(await deliver(request(target.url("/hook", "hooks.test").replace("http:", "https:")), { allowPrivate: false, resolve })).toMatchObject({
      error: "blocked_address",
    });
  });
});

describe("deliver: a name's addresses, tried in order", () => {
  it("an address that refuses the connection gives way to the next one, which gets the delivery", async () => {
    const target = await receiver();
    // 127.0.0.2 is loopback too, but nothing listens there on this port: refused at once.
    const resolve = tableResolver({ "two.test": ["127.0.0.2", "127.0.0.1"] });
    const outcome = await deliver(request(target.url("/hook", "two.test")), { allowPrivate: true, resolve });
    expect(outcome).toMatchObject({ status: "succeeded", responseStatus: 200 });
    expect(resolve.calls).toEqual(["two.test"]);
    expect(target.deliveries).toHaveLength(1);
  });

  it("when every address refuses, the attempt is connection_failed (the last address's error)", async () => {
    const port = await freePort();
    const resolve = tableResolver({ "none.test": ["127.0.0.2", "127.0.0.3", "127.0.0.1"] });
    expect(await deliver(request(`http://none.test:${port}/`), { allowPrivate: true, resolve })).toMatchObject({
      status: "failed",
      error: "connection_failed",
      detail: "ECONNREFUSED",
    });
  });

  it("addresses after a blocked one are never tried: one blocked address refuses the name", async () => {
    const target = await receiver();
    const resolve = tableResolver({ "mixed.test": ["8.8.8.8", "127.0.0.1"] });
    expect(await deliver(request(target.url("/hook", "mixed.test").replace("http:", "https:")), { resolve })).toMatchObject({
      error: "blocked_address",
      detail: "127.0.0.1 is loopback",
    });
    expect(target.connections).toBe(0);
  });
});

/** Whether this machine has an IPv6 loopback to listen on. */
async function hasIpv6Loopback(): Promise<boolean> {
  const probe = createServer();
  return new Promise((resolve) => {
    probe.once("error", () => resolve(false));
    probe.listen(0, "::1", () => probe.close(() => resolve(true)));
  });
}

describe.skipIf(!(await hasIpv6Loopback()))("deliver over IPv6", () => {
  it("delivers to a literal [::1] url with the bracketed Host header", async () => {
    const target = await receiver({ listenOn: "::1" });
    const outcome = await deliver(request(target.url()), loopback);
    expect(outcome).toMatchObject({ status: "succeeded", responseStatus: 200 });
    expect(target.deliveries[0]!.headers.host).toBe(`[::1]:${target.port}`);
    expect(verifyWith(secret, target.deliveries[0]!)).toEqual(event);
  });

  it("connects over IPv6 to a name pinned to ::1", async () => {
    const target = await receiver({ listenOn: "::1" });
    const resolve = tableResolver({ "v6.test": ["::1"] });
    const outcome = await deliver(request(target.url("/hook", "v6.test")), { allowPrivate: true, resolve });
    expect(outcome).toMatchObject({ status: "succeeded" });
    expect(target.deliveries[0]!.headers.host).toBe(`v6.test:${target.port}`);
  });

  it("refuses [::1] without connecting when the policy applies", async () => {
    const target = await receiver({ listenOn: "::1" });
    const outcome = await deliver(request(`https://[::1]:${target.port}/hook`));
    expect(outcome).toMatchObject({ error: "blocked_address", detail: "::1 is loopback" });
    expect(target.connections).toBe(0);
  });
});

describe("deliver over HTTPS", () => {
  let named: { cert: string; key: string };
  let byIp: { cert: string; key: string };
  beforeAll(async () => {
    named = await testCertificate({ dns: ["hooks.test"] });
    byIp = await testCertificate({ ip: ["127.0.0.1"] });
  });

  it("delivers to a name pinned to 127.0.0.1, verifying the certificate against the name (SNI kept)", async () => {
    const target = await receiver({ tls: named });
    const resolve = tableResolver({ "hooks.test": ["127.0.0.1"] });
    const outcome = await deliver(request(target.url("/hook", "hooks.test")), { allowPrivate: true, resolve, ca: named.cert });
    expect(outcome).toMatchObject({ status: "succeeded", responseStatus: 200, error: null });
    const [delivery] = target.deliveries as [ReceivedDelivery];
    expect(verifyWith(secret, delivery)).toEqual(event);
    expect(resolve.calls).toEqual(["hooks.test"]);
  });

  it("delivers to a literal address whose certificate names that address", async () => {
    const target = await receiver({ tls: byIp });
    const outcome = await deliver(request(target.url()), { allowPrivate: true, ca: byIp.cert });
    expect(outcome).toMatchObject({ status: "succeeded" });
    expect(verifyWith(secret, target.deliveries[0]!)).toEqual(event);
  });

  it("refuses an untrusted certificate as tls_failed", async () => {
    const target = await receiver({ tls: named });
    const resolve = tableResolver({ "hooks.test": ["127.0.0.1"] });
    const outcome = await deliver(request(target.url("/hook", "hooks.test")), { allowPrivate: true, resolve });
    expect(outcome).toMatchObject({ status: "failed", error: "tls_failed", responseStatus: null });
    expect(target.deliveries).toHaveLength(0);
  });

  it("refuses a certificate for another name as tls_failed", async () => {
    const target = await receiver({ tls: named });
    const resolve = tableResolver({ "other.test": ["127.0.0.1"] });
    const outcome = await deliver(request(target.url("/hook", "other.test")), { allowPrivate: true, resolve, ca: named.cert });
    expect(outcome).toMatchObject({ status: "failed", error: "tls_failed", detail: "ERR_TLS_CERT_ALTNAME_INVALID" });
    expect(target.deliveries).toHaveLength(0);
  });

  it("reports https to a plain HTTP server as tls_failed", async () => {
    const target = await receiver();
    const outcome = await deliver(request(target.url().replace("http:", "https:")), loopback);
    expect(outcome).toMatchObject({ status: "failed", error: "tls_failed" });
  });

  it("times out on a TLS receiver that never answers", async () => {
    const target = await receiver({ tls: named, handler: () => {} });
    const resolve = tableResolver({ "hooks.test": ["127.0.0.1"] });
    const outcome = await deliver(request(target.url("/hook", "hooks.test")), { allowPrivate: true, resolve, ca: named.cert, timeoutMs: 300 });
    expect(outcome).toMatchObject({ status: "failed", error: "timeout" });
  });
});
