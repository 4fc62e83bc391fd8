import { verify } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { newEndpointKeyPair, newEndpointSecret, verifyingKeyOf } from "./keys.js";
import { signatureHeader } from "./signature.js";

describe("signatureHeader", () => {
  const body = JSON.stringify({ id: "evt_1", object: "event" });
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = (signature: string) => ({ "webhook-id": "evt_1", "webhook-timestamp": String(timestamp), "webhook-signature": signature });

  it("is the library's own signature for one secret", () => {
    const secret = newEndpointSecret();
    expect(signatureHeader([secret], "evt_1", timestamp, body)).toBe(new Webhook(secret).sign("evt_1", new Date(timestamp * 1000), body));
  });

  it("joins one v1 signature per secret with spaces, newest first, each verifying alone", () => {
    const [newer, older] = [newEndpointSecret(), newEndpointSecret()];
    const header = signatureHeader([newer, older], "evt_1", timestamp, body);
    const parts = header.split(" ");
    expect(parts).toEqual([signatureHeader([newer], "evt_1", timestamp, body), signatureHeader([older], "evt_1", timestamp, body)]);
    for (const part of parts) expect(part).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(newer).verify(body, headers(header))).toEqual(JSON.parse(body));
    expect(new Webhook(older).verify(body, headers(header))).toEqual(JSON.parse(body));
  });

  it("signs with the secret's decoded bytes, as the specification says (not the whsec_ text)", () => {
    const secret = newEndpointSecret();
    const asText = new Webhook(secret, { format: "raw" }).sign("evt_1", new Date(timestamp * 1000), body);
    expect(signatureHeader([secret], "evt_1", timestamp, body)).not.toBe(asText);
  });

  it("signs v1a with a whsk_ key: an Ed25519 signature over id.timestamp.body that the public key verifies", () => {
    const pair = newEndpointKeyPair();
    const header = signatureHeader([pair.privateKey], "evt_1", timestamp, body);
    expect(header).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    const signature = Buffer.from(header.slice(4), "base64");
    expect(verify(null, Buffer.from(`evt_1.${timestamp}.${body}`), verifyingKeyOf(pair.publicKey), signature)).toBe(true);
    expect(verify(null, Buffer.from(`evt_1.${timestamp + 1}.${body}`), verifyingKeyOf(pair.publicKey), signature)).toBe(false);
    // The symmetric library has no v1a: it finds no signature of its own scheme.
    expect(() => new Webhook(newEndpointSecret()).verify(body, headers(header))).toThrow(/No matching signature/);
  });

  it("signs once per key in its own scheme during a rotation between schemes, newest first", () => {
    const pair = newEndpointKeyPair();
    const older = newEndpointSecret();
    const [v1a, v1] = signatureHeader([pair.privateKey, older], "evt_1", timestamp, body).split(" ");
    expect(v1a).toMatch(/^v1a,/);
    expect(verify(null, Buffer.from(`evt_1.${timestamp}.${body}`), verifyingKeyOf(pair.publicKey), Buffer.from(v1a!.slice(4), "base64"))).toBe(true);
    expect(new Webhook(older).verify(body, headers(`${v1a} ${v1}`))).toEqual(JSON.parse(body));
  });

  it("refuses to sign without a secret", () => {
    expect(() => signatureHeader([], "evt_1", timestamp, body)).toThrow(/at least one/);
  });
});
