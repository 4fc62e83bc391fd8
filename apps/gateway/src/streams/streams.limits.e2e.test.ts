import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../testutil/harness.js";
import { openSse, type SseStream } from "../testutil/sse.js";

// A stream's limits (CONTRACT.md section 14; docs/streams.md, "Limits"), with the keep-alive, the age and the
// buffer shortened for the test: a comment line keeps a quiet stream open, the server ends a stream at its age (the
// client resumes), a key holds at most 10 streams (the 11th is 429 too_many_streams), and a reader that stops reading
// is dropped while the others go on, the gateway holding at most its bound for it.

let stack: Stack;
let key: string;
const opened: SseStream[] = [];
beforeAll(async () => {
  stack = await startStack({ gateway: { streams: { keepAliveMs: 300, maxAgeMs: 5_000 } } });
  ({ key } = await withSecretKey(stack));
});
afterAll(async () => {
  for (const stream of opened) stream.close();
  await stack?.stop();
});

const open = async (path: string, options: { key?: string; lastEventId?: string } = {}) => {
  const stream = await openSse(stack.gateway.httpsPort, stack.gateway.certificate, path, { key, ...options });
  opened.push(stream);
  return stream;
};

const metric = async (name: string): Promise<number> => {
  const text = await (await fetch(`http://127.0.0.1:${stack.gateway.metricsPort}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(name));
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
};

it("sends a comment line while quiet, and ends the stream at its age; the client resumes from its last id", async () => {
  const stream = await open("/v1/events/stream");
  await eventually(() => expect(stream.comments).toBeGreaterThanOrEqual(2));
  const { id } = (await stack.api.post("/v1/resources", { key, form: { name: "aged" } })).json;
  await eventually(() => expect(stream.events.map((e) => e.data.data.object.id)).toContain(id));
  expect(await stream.ended).toBe("end");
  expect(await metric('gateway_streams_ended_total{stream="events",reason="max_age"}')).toBeGreaterThanOrEqual(1);
  const { id: later } = (await stack.api.post("/v1/resources", { key, form: { name: "after the age" } })).json;
  const resumed = await open("/v1/events/stream", { lastEventId: stream.events.at(-1)!.id });
  await eventually(() => expect(resumed.events.map((e) => e.data.data.object.id)).toEqual([later]));
  resumed.close();
});

it("lets a key hold 10 streams, of either kind: the 11th is 429 too_many_streams until one ends", async () => {
  const { key: holder } = await withSecretKey(stack);
  const ten: SseStream[] = [];
  for (let i = 0; i < 10; i++) ten.push(await open(i % 2 === 0 ? "/v1/events/stream" : "/v1/request_logs/stream", { key: holder }));
  expect(ten.map((s) => s.status)).toEqual(Array(10).fill(200));
  const eleventh = await open("/v1/events/stream", { key: holder });
  expect([eleventh.status, eleventh.error.type, eleventh.error.code]).toEqual([429, "rate_limit_error", "too_many_streams"]);
  expect(Number(eleventh.headers["retry-after"])).toBeGreaterThanOrEqual(1);
  // Another key of the account is not limited by this one's.
  const other = await open("/v1/events/stream", { key });
  expect(other.status).toBe(200);
  ten[0]!.close();
  const again = await eventually(async () => {
    const attempt = await open("/v1/events/stream", { key: holder });
    expect(attempt.status).toBe(200);
    return attempt;
  });
  for (const stream of [...ten, again, other]) stream.close();
});
