import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../testutil/harness.js";
import { followSse, openSse } from "../testutil/sse.js";

// Streams across restarts (docs/streams.md, "Fan-out"): a gateway that stops ends its streams and their clients
// resume at another with Last-Event-ID, getting what was made meanwhile once each; and core restarting under a
// gateway's feed loses nothing of a stream that stays open (the feed resumes its watch from its token).

let stack: Stack;
let key: string;
beforeAll(async () => {
  stack = await startStack();
  ({ key } = await withSecretKey(stack));
});
afterAll(() => stack?.stop());

const create = async (name: string, api = stack.api) => {
  for (;;) {
    const response = await api.post("/v1/resources", { key, form: { name }, headers: { "Idempotency-Key": `restart-${name}` } });
    if (response.status === 201) return response.json.id as string;
    // Core restarting: 503 (or an unknown outcome), retried under the same key.
    expect([500, 503]).toContain(response.status);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
};

it("a gateway that stops ends its streams; resumed at another gateway with Last-Event-ID, the 50 events made meanwhile come once each", async () => {
  const other = await stack.anotherGateway();
  const first = await openSse(stack.gateway.httpsPort, stack.gateway.certificate, "/v1/events/stream", { key });
  const seed = await create("before the restart");
  await eventually(() => expect(first.events.map((e) => e.data.data.object.id)).toContain(seed));
  await stack.gateway.stop();
  expect(await first.ended).toBe("end");
  const last = first.events.at(-1)!.id;
  const made = await Promise.all(Array.from({ length: 50 }, (_, i) => create(`while the gateway was gone ${i}`, other.api)));
  const resumed = await openSse(other.gateway.httpsPort, other.gateway.certificate, "/v1/events/stream", { key, lastEventId: last });
  await eventually(() => expect(resumed.events).toHaveLength(50));
  expect(resumed.events.map((e) => e.data.data.object.id).sort()).toEqual([...made].sort());
  resumed.close();
}, 60_000);

it("core restarting under the feed: a stream that stays open gets every event made before and after, once each", async () => {
  const other = await stack.anotherGateway();
  const stream = followSse(other.gateway.httpsPort, other.gateway.certificate, "/v1/events/stream", { key });
  await eventually(() => expect(stream.connections).toBe(1));
  const before = await Promise.all(Array.from({ length: 20 }, (_, i) => create(`before core stops ${i}`, other.api)));
  await stack.stopCore();
  await stack.restartCore();
  const after = await Promise.all(Array.from({ length: 20 }, (_, i) => create(`after core is back ${i}`, other.api)));
  await eventually(() => expect(stream.events.length).toBeGreaterThanOrEqual(40), { timeoutMs: 30_000 });
  const ids = stream.events.map((e) => e.data.data.object.id);
  expect(new Set(ids).size).toBe(ids.length);
  expect([...ids].sort()).toEqual([...before, ...after].sort());
  process.stderr.write(`core restart under an open stream: ${ids.length} events over ${stream.connections} connection(s)\n`);
  stream.close();
}, 60_000);
