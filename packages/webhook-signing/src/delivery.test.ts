import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { deliveryHeaders, WEBHOOK_USER_AGENT } from "./delivery.js";
import { newEndpointSecret } from "./keys.js";

describe("deliveryHeaders", () => {
  it("are JSON with its byte length, the product's user agent and Standard Webhooks' three headers, which the library verifies", () => {
    const secret = newEndpointSecret();
    const body = JSON.stringify({ id: "evt_1", object: "event", data: { object: { name: "café ☕" } } });
    const timestampSeconds = Math.floor(Date.now() / 1000);
    const headers = deliveryHeaders({ eventId: "evt_1", timestampSeconds, body, keys: [secret] });
    expect(Object.keys(headers)).toEqual(["content-type", "content-length", "user-agent", "webhook-id", "webhook-timestamp", "webhook-signature"]);
    expect(headers).toMatchObject({
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
      "user-agent": WEBHOOK_USER_AGENT,
      "webhook-id": "evt_1",
      "webhook-timestamp": String(timestampSeconds),
    });
    expect(Number(headers["content-length"])).toBeGreaterThan(body.length);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newEndpointSecret()).verify(body, headers)).toThrow();
  });
});
