import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { newEndpointSecret } from "./secret.js";
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

  it("refuses to sign without a secret", () => {
    expect(() => signatureHeader([], "evt_1", timestamp, body)).toThrow(/at least one/);
  });
});
