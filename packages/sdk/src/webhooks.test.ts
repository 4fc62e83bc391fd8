import { createHmac, generateKeyPairSync, sign } from "node:crypto";
import { describe, expect, it } from "vitest";
import { WebhookVerificationError } from "./errors.js";
import { verify } from "./webhooks.js";

// Deliveries signed here as the service signs them (Standard Webhooks), checked by the SDK's verify.
const body = JSON.stringify({ id: "evt_1", object: "event", type: "resource.created", data: { object: { id: "res_1" } } });
const secretBytes = Buffer.alloc(32, 7);
const secret = `whsec_${secretBytes.toString("base64")}`;
const now = 1_800_000_000;
const signed = (id: string, timestamp: number, payload: string) => Buffer.from(`${id}.${timestamp}.${payload}`);
const v1 = (timestamp: number, payload = body) =>
  `v1,${createHmac("sha256", secretBytes)
    .update(signed("evt_1", timestamp, payload))
    .digest("base64")}`;

const { publicKey, privateKey } = generateKeyPairSync("ed25519");
const publicRaw = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url");
const v1a = (timestamp: number) => `v1a,${sign(null, signed("evt_1", timestamp, body), privateKey).toString("base64")}`;
const headers = (signature: string, timestamp = now) => ({ "webhook-id": "evt_1", "webhook-timestamp": String(timestamp), "webhook-signature": signature });

describe("Webhooks.verify", () => {
  it("accepts a v1 (whsec_) and a v1a (whpk_) delivery and answers the event", async () => {
    expect((await verify(body, headers(v1(now)), secret, { now })).type).toBe("resource.created");
    expect((await verify(body, new Headers(headers(`v1,bm9wZQ== ${v1(now)}`)), secret, { now })).id).toBe("evt_1");
    expect((await verify(new TextEncoder().encode(body), headers(v1a(now)), `whpk_${publicRaw.toString("base64")}`, { now })).id).toBe("evt_1");
  });

  it("refuses a changed body, another secret, the other scheme, a stale timestamp and missing headers", async () => {
    const refused = (promise: Promise<unknown>) => expect(promise).rejects.toBeInstanceOf(WebhookVerificationError);
    await refused(verify(body.replace("res_1", "res_2"), headers(v1(now)), secret, { now }));
    await refused(verify(body, headers(v1(now)), `whsec_${Buffer.alloc(32, 8).toString("base64")}`, { now }));
    await refused(verify(body, headers(v1(now)), `whpk_${publicRaw.toString("base64")}`, { now }));
    await refused(verify(body, headers(v1(now - 301), now - 301), secret, { now }));
    await expect(verify(body, headers(v1(now - 301), now - 301), secret, { now })).rejects.toThrow(/300 seconds/);
    await refused(verify(body, { "webhook-id": "evt_1" }, secret, { now }));
    await refused(verify(body, headers(v1(now)), "not-a-secret", { now }));
  });
});
