import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { arrivedOverHttps, clientAddress } from "./client-address.js";

/** A request as Node gives it: the peer's address and each header's lines. */
function request(peer: string, headers: Record<string, string[]> = {}): IncomingMessage {
  return { socket: { remoteAddress: peer }, headersDistinct: headers } as unknown as IncomingMessage;
}

const proxies = new Set(["10.0.0.1", "10.0.0.2"]);

describe("arrivedOverHttps", () => {
  it("believes X-Forwarded-Proto only from a trusted peer", () => {
    expect(arrivedOverHttps(request("192.0.2.7", { "x-forwarded-proto": ["https"] }), proxies)).toBe(false);
    expect(arrivedOverHttps(request("10.0.0.1", { "x-forwarded-proto": ["https"] }), proxies)).toBe(true);
    expect(arrivedOverHttps(request("::ffff:10.0.0.1", { "x-forwarded-proto": ["HTTPS"] }), proxies)).toBe(true);
    expect(arrivedOverHttps(request("10.0.0.1"), proxies)).toBe(false);
  });

  it("takes the value the nearest trusted proxy appended, not what the client wrote first", () => {
    // The client wrote "https"; the trusted proxy saw plain HTTP and appended "http".
    expect(arrivedOverHttps(request("10.0.0.1", { "x-forwarded-proto": ["https, http"] }), proxies)).toBe(false);
    expect(arrivedOverHttps(request("10.0.0.1", { "x-forwarded-proto": ["https", "http"] }), proxies)).toBe(false);
    // The client wrote "http" itself; the proxy that terminated TLS says https.
    expect(arrivedOverHttps(request("10.0.0.1", { "x-forwarded-proto": ["http, https"] }), proxies)).toBe(true);
    expect(arrivedOverHttps(request("10.0.0.1", { "x-forwarded-proto": ["http", "https"] }), proxies)).toBe(true);
  });

  it("needs https from every trusted hop of a chain of proxies", () => {
    const chain = (protos: string, forwardedFor: string) => request("10.0.0.1", { "x-forwarded-proto": [protos], "x-forwarded-for": [forwardedFor] });
    // client -> 10.0.0.2 -> 10.0.0.1 -> us: both proxies are trusted, so both values count.
    expect(arrivedOverHttps(chain("https, https", "192.0.2.7, 10.0.0.2"), proxies)).toBe(true);
    expect(arrivedOverHttps(chain("http, https", "192.0.2.7, 10.0.0.2"), proxies)).toBe(false);
    // Only the nearest hop is trusted: what came before it is the client's word.
    expect(arrivedOverHttps(chain("http, https", "192.0.2.7, 192.0.2.8"), proxies)).toBe(true);
  });
});

describe("clientAddress", () => {
  it("is the peer unless the peer is a trusted proxy", () => {
    expect(clientAddress(request("192.0.2.7", { "x-forwarded-for": ["203.0.113.9"] }), proxies)).toBe("192.0.2.7");
    expect(clientAddress(request("::ffff:192.0.2.7"), proxies)).toBe("192.0.2.7");
  });

  it("behind trusted proxies is the nearest forwarded address that is not one of them", () => {
    expect(clientAddress(request("10.0.0.1", { "x-forwarded-for": ["203.0.113.9"] }), proxies)).toBe("203.0.113.9");
    // The client cannot choose its bucket by writing addresses on the left.
    expect(clientAddress(request("10.0.0.1", { "x-forwarded-for": ["1.2.3.4, 203.0.113.9", "10.0.0.2"] }), proxies)).toBe("203.0.113.9");
    expect(clientAddress(request("10.0.0.1", { "x-forwarded-for": ["not-an-ip"] }), proxies)).toBe("10.0.0.1");
    expect(clientAddress(request("10.0.0.1"), proxies)).toBe("10.0.0.1");
  });
});
