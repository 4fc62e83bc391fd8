import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../testutil/harness.js";
import { followSse, openSse, type SseStream } from "../testutil/sse.js";

// A reader that stops reading its socket (docs/streams.md, "Limits"): once more than its bound waits for it, the
// gateway drops it (it resumes from its last id when it reads again), holding at most that bound and one event for
// it meanwhile, while a reader that reads gets every event.

// Room for a few of the test's largest events (55 KB): the reading client shares this process's event loop.
const BUFFER_BYTES = 256 * 1024;
let stack: Stack;
let key: string;
const opened: SseStream[] = [];
beforeAll(async () => {
  stack = await startStack({ gateway: { streams: { bufferBytes: BUFFER_BYTES } } });
  ({ key } = await withSecretKey(stack));
});
afterAll(async () => {
  for (const stream of opened) stream.close();
  await stack?.stop();
});

const open = async (path: string) => {
  const stream = await openSse(stack.gateway.httpsPort, stack.gateway.certificate, path, { key });
  opened.push(stream);
  return stream;
};

const metric = async (name: string): Promise<number> => {
  const text = await (await fetch(`http://127.0.0.1:${stack.gateway.metricsPort}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(name));
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
};

it("drops a reader that stops reading its socket, holding at most its bound for it, while a reader that reads gets every event", async () => {
  // One resource with the largest metadata, updated 300 times with new values: each event about 55 KB, 16 MB in all,
  // far more than the sockets' own buffers hold.
  const value = (round: number) => `${round}-`.padEnd(500, "x");
  const metadata = (round: number) => Object.fromEntries(Array.from({ length: 50 }, (_, k) => [`key${k}`, value(round)]));
  const { id } = (await stack.api.post("/v1/resources", { key, json: { name: "big", metadata: metadata(0) } })).json;
  const stalled = await open(`/v1/events/stream?object=${id}`);
  // A reader that reads (and would resume, were its stream ended).
  const reading = followSse(stack.gateway.httpsPort, stack.gateway.certificate, `/v1/events/stream?object=${id}`, { key });
  await eventually(() => expect(reading.connections).toBe(1));
  stalled.stall();
  const slowBefore = await metric('gateway_streams_ended_total{stream="events",reason="slow"}');
  let mostBuffered = 0;
  for (let round = 1; round <= 300; round++) {
    expect((await stack.api.post(`/v1/resources/${id}`, { key, json: { metadata: metadata(round) } })).status).toBe(200);
    if (round % 25 === 0) mostBuffered = Math.max(mostBuffered, await metric("gateway_stream_buffered_bytes"));
  }
  await eventually(() => expect(reading.events).toHaveLength(300), { timeoutMs: 60_000 });
  expect(reading.events.map((e) => e.data.sequence)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
  await eventually(async () => expect(await metric('gateway_streams_ended_total{stream="events",reason="slow"}')).toBe(slowBefore + 1));
  // What the gateway held for its streams stayed within each stream's bound and one event.
  expect(mostBuffered).toBeLessThanOrEqual(2 * (BUFFER_BYTES + 60_000));
  expect(await metric("gateway_stream_buffered_bytes")).toBeLessThanOrEqual(BUFFER_BYTES + 60_000);
  process.stderr.write(
    `stalled reader: dropped; the reading one got all 300 over ${reading.connections} connections; most bytes held for the streams at once ` +
      `${mostBuffered} (bound ${BUFFER_BYTES} each) over 16 MB of events\n`,
  );
  reading.close();
  stalled.close();
}, 180_000);
