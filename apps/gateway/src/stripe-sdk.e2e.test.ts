import { Agent } from "node:https";
import { Writable } from "node:stream";
import { pino } from "pino";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "./testutil/harness.js";

// The real stripe-node SDK pointed at the gateway: it retries only what the server marks
// `Stripe-Should-Retry: true` (a 429 is otherwise final for it), and never what is marked false.

const requestLines: Record<string, unknown>[] = [];
const logger = pino(
  { level: "info" },
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString("utf8").split("\n").filter(Boolean)) {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        if (parsed["msg"] === "request") requestLines.push(parsed);
      }
      done();
    },
  }),
);

let stack: Stack;
let key: string;
beforeAll(async () => {
  stack = await startStack({ gateway: { rateLimits: { live: 5, test: 5 } }, logs: { gateway: logger } });
  ({ key } = await withSecretKey(stack));
});
afterAll(() => stack?.stop());

function sdk(secret: string, maxNetworkRetries: number) {
  return new Stripe(secret, {
    host: "127.0.0.1",
    port: stack.gateway.httpsPort,
    protocol: "https",
    httpAgent: new Agent({ ca: stack.gateway.certificate }),
    maxNetworkRetries,
  });
}

describe("stripe-node against the gateway", () => {
  it("completes every call of a burst over the rate limit with maxNetworkRetries, by retrying the 429s", async () => {
    const stripe = sdk(key, 8);
    const before = requestLines.length;
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => stripe.rawRequest("POST", "/v1/resources", { name: `burst ${i}` })));
    const failed = results.filter((r) => r.status === "rejected").map((r) => String((r as PromiseRejectedResult).reason));
    expect(failed).toEqual([]);
    const lines = requestLines.slice(before);
    // Some calls were refused with 429 first and then retried: more requests than calls, all created once.
    expect(lines.filter((l) => l["status"] === 429).length).toBeGreaterThan(0);
    expect(lines.filter((l) => l["status"] === 201)).toHaveLength(20);
  });

  it("does not retry an error a retry cannot fix", async () => {
    const stripe = sdk(`sk_test_${"0".repeat(32)}`, 3);
    const before = requestLines.length;
    await expect(stripe.rawRequest("GET", "/v1/resources", {})).rejects.toMatchObject({ statusCode: 401 });
    expect(requestLines.slice(before).map((l) => l["status"])).toEqual([401]);
  });
});
