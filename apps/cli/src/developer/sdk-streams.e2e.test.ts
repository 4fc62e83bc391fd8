import { eventually } from "@rms/test-db/testkit";
import { type ReconnectInfo, RMS, RMSAuthenticationError, type WebhookEvent } from "@rms/sdk";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { type DeveloperStack, startDeveloperStack } from "../testutil/developer-stack.js";

/*
 * The SDK's `events.stream()` against the real gateway (processes, a real mongod): it resumes by itself across a
 * gateway restart, and throws the 401 that follows a revocation. The wire rules one by one (cursors, Retry-After,
 * closing) are packages/sdk/src/streams.test.ts.
 */

let stack: DeveloperStack;
beforeAll(async () => {
  stack = await startDeveloperStack({ name: "sdk-streams" });
});
afterAll(() => stack?.stop());

/** The ids of the account's events in the order the streams deliver them: their positions (docs/streams.md). */
async function eventIdsByPosition(stack: DeveloperStack, resourceIds: ReadonlySet<string>): Promise<string[]> {
  const client = await new MongoClient(stack.mongoUri).connect();
  try {
    const events = await client
      .db(stack.databaseName)
      .collection("events")
      .find({}, { projection: { _id: 1, pos: 1, "object.id": 1 } })
      .sort({ pos: 1 })
      .toArray();
    return events.filter((e) => resourceIds.has(e["object"]?.id)).map((e) => String(e._id));
  } finally {
    await client.close();
  }
}

describe("rms.events.stream() against the gateway", () => {
  it("resumes across a gateway restart: the events made while it was away come once each, in the order of the log, then the later ones", async () => {
    const rms = new RMS(stack.key, { baseUrl: `https://localhost:${stack.gatewayPort}`, ca: stack.certificate });
    const reconnects: ReconnectInfo[] = [];
    let opens = 0;
    const stream = rms.events.stream({ types: ["resource.created"] }, { onOpen: () => opens++, onReconnect: (info) => reconnects.push(info) });
    onTestFinished(() => stream.close());
    const received: WebhookEvent[] = [];
    const reading = (async () => {
      for await (const event of stream) received.push(event);
    })();
    await eventually(() => expect(opens).toBe(1), { timeoutMs: 30_000 });

    const before = [];
    for (let i = 0; i < 5; i++) before.push(await stack.createResource(`before ${i}`));
    await eventually(() => expect(received).toHaveLength(5), { timeoutMs: 30_000 });

    const away: string[] = [];
    await stack.restartGateway(async (otherPort) => {
      for (let i = 0; i < 30; i++) away.push(await stack.createResource(`while away ${i}`, otherPort));
    });
    const after = [];
    for (let i = 0; i < 5; i++) after.push(await stack.createResource(`after ${i}`));
    await eventually(() => expect(received.length).toBeGreaterThanOrEqual(40), { timeoutMs: 60_000 });

    const made = [...before, ...away, ...after];
    expect(received.map((e) => e.data.object.id).sort()).toEqual([...made].sort());
    expect(received.map((e) => e.id)).toEqual(await eventIdsByPosition(stack, new Set(made)));
    expect(opens).toBeGreaterThanOrEqual(2);
    expect(reconnects[0]!.lastEventId).toBe(received[4]!.id);
    console.log(
      `across the restart: ${received.length} events over ${opens} connections; ${reconnects.length} reconnection attempts ` +
        `(${reconnects.map((r) => r.reason.message).join("; ")})`,
    );
    stream.close();
    await reading;
  }, 180_000);

  it("a stream that has received nothing yet resumes across a restart too: from the newest event listed before it opened", async () => {
    const target = await stack.createResource("updated while the gateway is away");
    const rms = new RMS(stack.key, { baseUrl: `https://localhost:${stack.gatewayPort}`, ca: stack.certificate });
    let opens = 0;
    const stream = rms.events.stream({ types: ["resource.updated"] }, { onOpen: () => opens++ });
    onTestFinished(() => stream.close());
    const received: WebhookEvent[] = [];
    const reading = (async () => {
      for await (const event of stream) received.push(event);
    })();
    await eventually(() => expect(opens).toBe(1), { timeoutMs: 30_000 });
    const statuses: string[] = [];
    await stack.restartGateway(async (otherPort) => {
      for (const status of ["paused", "active", "paused"]) {
        const reply = await stack.call("POST", `/v1/resources/${target}`, { form: `status=${status}`, port: otherPort });
        expect(reply.status).toBe(200);
        statuses.push(status);
      }
    });
    await eventually(() => expect(received).toHaveLength(3), { timeoutMs: 60_000 });
    expect(received.map((e) => [e.type, e.data.object.id, e.data.object.status])).toEqual(statuses.map((status) => ["resource.updated", target, status]));
    expect(opens).toBeGreaterThanOrEqual(2);
    stream.close();
    await reading;
  }, 180_000);

  it("throws RMSAuthenticationError once the key is revoked (the gateway ends the stream within a minute; the reconnection is refused)", async () => {
    const rms = new RMS(stack.key, { baseUrl: `https://localhost:${stack.gatewayPort}`, ca: stack.certificate });
    let opened = false;
    const stream = rms.events.stream(undefined, { onOpen: () => (opened = true) });
    onTestFinished(() => stream.close());
    const received: string[] = [];
    const ended = (async () => {
      for await (const event of stream) received.push(event.id);
    })().then(
      () => "done",
      (error: unknown) => error,
    );
    await eventually(() => expect(opened).toBe(true), { timeoutMs: 30_000 });
    const id = await stack.createResource("before the revocation");
    await eventually(() => expect(received).toHaveLength(1), { timeoutMs: 30_000 });
    const revokedAt = Date.now();
    await stack.revokeKey();
    const thrown = await ended;
    console.log(`the stream threw ${(Date.now() - revokedAt) / 1000} s after the revocation: ${String(thrown)}`);
    expect(thrown).toBeInstanceOf(RMSAuthenticationError);
    expect(thrown).toMatchObject({ statusCode: 401, code: "api_key_revoked" });
    expect(id).toMatch(/^res_/);
  }, 150_000);
});
