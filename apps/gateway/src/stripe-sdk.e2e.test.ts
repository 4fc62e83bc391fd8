import { createServer, type Server } from "node:http";
import { Agent } from "node:https";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { pino } from "pino";
import Stripe from "stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setJob } from "./testutil/jobs.js";
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

// Issue 21 item 5: stripe-node reads any answer whose body has a truthy top-level `error` as a failed request,
// whatever its status. A failed job (`failure_code`, `failure_message`) and the resend of a failed attempt
// (`failure_code`) answer 200 without one, so the SDK hands them over as the successes they are.
describe("stripe-node reads a failed job and a failed attempt as answers, not errors", () => {
  let gw: Stack;
  let secret: string;
  let mongo: MongoClient;
  let receiver: Server;
  let down: string;
  beforeAll(async () => {
    // A worker beside core: it makes resends (in the endpoint's lane).
    gw = await startStack({
      coreSettings: { secretKeyring: { primary: { id: "sdkkey01", bytes: Buffer.alloc(32, 9) } }, webhookAllowPrivate: true },
      worker: true,
    });
    ({ key: secret } = await withSecretKey(gw));
    mongo = await new MongoClient(gw.mongoUri).connect();
    receiver = createServer((_req, res) => res.writeHead(503).end("down for maintenance"));
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    down = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
    await mongo?.close();
    await gw?.stop();
  });

  const client = () =>
    new Stripe(secret, {
      host: "127.0.0.1",
      port: gw.gateway.httpsPort,
      protocol: "https",
      httpAgent: new Agent({ ca: gw.gateway.certificate }),
      maxNetworkRetries: 0,
    });

  it("the SDK still throws on a 200 with a top-level error (what the renames avoid)", async () => {
    const fake = createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end('{"id":"wa_1","error":"connection_failed"}'));
    await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
    try {
      const stripe = new Stripe(secret, { host: "127.0.0.1", port: (fake.address() as AddressInfo).port, protocol: "http", maxNetworkRetries: 0 });
      await expect(stripe.rawRequest("GET", "/v1/anything", {})).rejects.toBeInstanceOf(Error);
    } finally {
      await new Promise<void>((resolve) => fake.close(() => resolve()));
    }
  });

  it("resend of an attempt that failed: 200 with failure_code, resolved by rawRequest", async () => {
    const stripe = client();
    const endpoint = await stripe.webhookEndpoints.create({ url: down, enabled_events: ["webhook_endpoint.disabled"] as never });
    const resource = (await stripe.rawRequest("POST", "/v1/resources", { name: "sdk" })) as unknown as { id: string };
    const event = await eventually(async () => {
      const page = await stripe.events.list({ limit: 100 });
      const found = page.data.find((e) => (e.data.object as { id?: string }).id === resource.id);
      expect(found).toBeDefined();
      return found!;
    });
    // Subscribed once the event is fanned out (a resend must be of a subscribed type): only the resend reaches it.
    await stripe.webhookEndpoints.update(endpoint.id, { enabled_events: ["resource.created"] as never });
    const attempt = (await stripe.rawRequest("POST", `/v1/events/${event.id}/resend`, { webhook_endpoint: endpoint.id })) as unknown as Record<string, unknown>;
    expect(attempt).toMatchObject({ object: "webhook_attempt", status: "failed", response_status: 503, failure_code: "http_error" });
    expect(attempt).not.toHaveProperty("error");
    // Listed the same way.
    const attempts = (await stripe.rawRequest("GET", `/v1/webhook_endpoints/${endpoint.id}/attempts`, {})) as unknown as { data: Record<string, unknown>[] };
    expect(attempts.data[0]).toMatchObject({ id: attempt["id"], failure_code: "http_error" });
  });

  it("a failed job: 200 with failure_code and failure_message, resolved by rawRequest and listed", async () => {
    const stripe = client();
    const job = (await stripe.rawRequest("POST", "/v1/jobs", { type: "resources.import", params: { items: [{ name: "a" }] } })) as unknown as { id: string };
    await setJob(mongo.db(gw.databaseName), job.id, {
      status: "failed",
      error: { code: "service_unavailable", message: "The database did not answer in time." },
      finished_at: Math.floor(Date.now() / 1000),
    });
    const failed = (await stripe.rawRequest("GET", `/v1/jobs/${job.id}`, {})) as unknown as Record<string, unknown>;
    expect(failed).toMatchObject({
      id: job.id,
      status: "failed",
      failure_code: "service_unavailable",
      failure_message: "The database did not answer in time.",
    });
    expect(failed).not.toHaveProperty("error");
    const listed = (await stripe.rawRequest("GET", "/v1/jobs", {})) as unknown as { data: Record<string, unknown>[] };
    expect(listed.data.find((j) => j["id"] === job.id)).toMatchObject({ failure_code: "service_unavailable" });
  });
});
