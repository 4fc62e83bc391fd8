import { describe, expect, it } from "vitest";
import { leakedKeyCandidates, leakedKeyCandidatesInRaw } from "./scan.js";

const SK = "sk_test_" + "A1b2C3d4".repeat(4);
const RK = "rk_live_" + "Z9y8X7w6".repeat(4);
const PK = "pk_test_" + "Q1w2E3r4".repeat(4);
const b64 = (text: string) => Buffer.from(text).toString("base64");

describe("leakedKeyCandidates", () => {
  it.each([
    ["Bearer", { authorization: `Bearer ${SK}` }],
    ["lower-case bearer", { authorization: `bearer ${SK}` }],
    ["no scheme", { authorization: SK }],
    ["scheme glued on", { authorization: `Bearer${SK}` }],
    ["another scheme", { authorization: `Token ${SK}` }],
    ["Basic user", { authorization: `Basic ${b64(`${SK}:`)}` }],
    ["Basic password", { authorization: `Basic ${b64(`user:${SK}`)}` }],
    ["another header", { "x-api-key": SK }],
  ])("finds a key in the headers: %s", (_name, headers) => {
    expect(leakedKeyCandidates({ headers, url: "/v1/resources" })).toEqual([SK]);
  });

  it("finds keys in the query string, escaped or not, and in form and JSON bodies, \\u-escaped too", () => {
    expect(leakedKeyCandidates({ headers: {}, url: `/v1/resources?key=${SK}` })).toEqual([SK]);
    expect(leakedKeyCandidates({ headers: {}, url: `/v1/resources?key=%73%6B${SK.slice(2)}` })).toEqual([SK]);
    expect(leakedKeyCandidates({ headers: {}, url: "/", body: Buffer.from(`name=x&api_key=${encodeURIComponent(SK)}`) })).toEqual([SK]);
    const escaped = JSON.stringify({ name: "x", key: RK }).replace("rk_", "\\u0072\\u006b_");
    expect(leakedKeyCandidates({ headers: {}, url: "/", body: Buffer.from(escaped) })).toEqual([RK]);
  });

  it("finds every distinct key, ignores publishable keys and bounds the number of candidates", () => {
    const found = leakedKeyCandidates({ headers: { authorization: `Bearer ${SK}` }, url: `/?a=${RK}&b=${PK}&c=${SK}` });
    expect(found.sort()).toEqual([RK, SK].sort());
    const many = Array.from({ length: 50 }, (_, i) => `sk_test_${String(i).padStart(32, "0")}`).join(" ");
    expect(leakedKeyCandidates({ headers: {}, url: "/", body: Buffer.from(many) })).toHaveLength(20);
  });

  it("finds keys in the raw bytes of a request that could not be parsed", () => {
    const raw = Buffer.from(`GET /v1/resources HTTP/1.1\r\nAuthorization: Basic ${b64(`${SK}:`)}\r\nX-Pad: ${"a".repeat(100)}\r\nX-Key: ${RK}`);
    expect(leakedKeyCandidatesInRaw(raw).sort()).toEqual([RK, SK].sort());
  });
});
