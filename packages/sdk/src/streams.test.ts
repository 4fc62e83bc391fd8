import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RMS, RMSAPIError, RMSAuthenticationError, RMSConnectionError, RMSInvalidRequestError } from "./node.js";
import { reconnectDelayMs } from "./streams.js";
import { RMSError } from "./errors.js";

/*
 * The stream methods' wire rules against a scripted HTTP server: what each connection asks for (Last-Event-ID, the
 * filters), how answers and ends are taken (resume, wait, throw), and closing. The same against the real gateway,
 * across its restart and a revoked key, is apps/cli/src/developer/sdk-streams.e2e.test.ts.
 */

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

interface Seen {
  readonly path: string;
  readonly lastEventId: string | undefined;
  readonly at: number;
}

let server: Server;
let baseUrl: string;
const script: Handler[] = [];
const seen: Seen[] = [];
/** Responses still open (a stream the test has not ended). */
const open = new Set<ServerResponse>();

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ path: req.url!, lastEventId: req.headers["last-event-id"] as string | undefined, at: Date.now() });
    open.add(res);
    res.on("close", () => open.delete(res));
    const next = script.shift();
    if (next) next(req, res);
    else res.writeHead(500).end();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const res of open) res.destroy();
  server.close();
});

const frame = (id: string, type: string, data: object) => `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
const event = (n: number) => ({ id: `evt_${n}`, object: "event", type: "resource.created", data: { object: { id: `res_${n}` } } });

/** A stream answer: its frames, then the connection is cut (`cut`) or left open. */
const streamOf =
  (frames: string[], end: "cut" | "end" | "open" = "open"): Handler =>
  (_req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "Request-Id": "req_stream" });
    res.write(": keep-alive\n\n");
    for (const text of frames) res.write(text);
    if (end === "cut") setTimeout(() => res.destroy(), 20);
    if (end === "end") setTimeout(() => res.end(), 20);
  };
const errorOf =
  (status: number, body: object, headers: Record<string, string> = {}): Handler =>
  (_req, res) =>
    res.writeHead(status, { "Content-Type": "application/json", ...headers }).end(JSON.stringify({ error: body }));
const listOf =
  (ids: string[]): Handler =>
  (_req, res) =>
    res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ object: "list", data: ids.map((id) => ({ id })), has_more: false }));

function reset(...handlers: Handler[]) {
  script.length = 0;
  script.push(...handlers);
  seen.length = 0;
}

/** Takes `n` items from a stream's iterator. */
async function take<T>(iterator: AsyncIterator<T>, n: number): Promise<T[]> {
  const out: T[] = [];
  while (out.length < n) {
    const next = await iterator.next();
    if (next.done) break;
    out.push(next.value);
  }
  return out;
}

for (const transport of ["node:https", "fetch"] as const) {
  describe(`a stream over ${transport}`, () => {
    const client = () => new RMS("sk_test_x", { baseUrl, ...(transport === "fetch" ? { fetch: globalThis.fetch } : {}) });

    it("gives each item typed and in order, and after a cut connects again with Last-Event-ID = the last id received", async () => {
      reset(
        listOf(["evt_0"]),
        streamOf([frame("evt_1", "resource.created", event(1)), frame("evt_2", "resource.created", event(2))], "cut"),
        streamOf([frame("evt_3", "resource.created", event(3))]),
      );
      const reconnects: unknown[] = [];
      const stream = client().events.stream({ types: ["resource.*"] }, { onReconnect: (info) => reconnects.push(info) });
      const iterator = stream[Symbol.asyncIterator]();
      const items = await take(iterator, 3);
      expect(items.map((e) => e.id)).toEqual(["evt_1", "evt_2", "evt_3"]);
      expect(items[0]!.data.object).toEqual({ id: "res_1" });
      expect(seen.map((s) => [s.path, s.lastEventId])).toEqual([
        ["/v1/events?limit=1", undefined],
        ["/v1/events/stream?types%5B%5D=resource.*", undefined],
        ["/v1/events/stream?types%5B%5D=resource.*", "evt_2"],
      ]);
      expect(reconnects).toEqual([expect.objectContaining({ attempt: 1, lastEventId: "evt_2", reason: expect.any(RMSConnectionError) })]);
      expect(stream.lastEventId).toBe("evt_3");
      expect(stream.lastResponse?.requestId).toBe("req_stream");
      stream.close();
      expect(await iterator.next()).toEqual({ done: true, value: undefined });
    });

    it("before any item, resumes after the newest item listed before the connection that ended (what came meanwhile is not lost)", async () => {
      reset(listOf(["evt_anchor"]), streamOf([], "end"), listOf(["evt_later"]), streamOf([frame("evt_9", "resource.created", event(9))]));
      const stream = client().events.stream();
      const iterator = stream[Symbol.asyncIterator]();
      expect((await take(iterator, 1)).map((e) => e.id)).toEqual(["evt_9"]);
      expect(seen.map((s) => [s.path, s.lastEventId])).toEqual([
        ["/v1/events?limit=1", undefined],
        ["/v1/events/stream", undefined],
        ["/v1/events?limit=1", undefined],
        ["/v1/events/stream", "evt_anchor"],
      ]);
      stream.close();
    });

    it("with starting_after, asks for it in the query and reads no anchor; request logs stream the same way", async () => {
      reset(streamOf(['id: req_2\nevent: request_log\ndata: {"id":"req_2","object":"request_log","status":404}\n\n']));
      const stream = client().requestLogs.stream({ status: "4xx", starting_after: "req_1" });
      const iterator = stream[Symbol.asyncIterator]();
      const [log] = await take(iterator, 1);
      expect(log).toMatchObject({ id: "req_2", status: 404 });
      expect(seen.map((s) => [s.path, s.lastEventId])).toEqual([["/v1/request_logs/stream?status=4xx&starting_after=req_1", undefined]]);
      stream.close();
    });

    it("waits for Retry-After on 429 too_many_streams, then resumes", async () => {
      reset(
        listOf([]),
        streamOf([frame("evt_1", "resource.created", event(1))], "cut"),
        errorOf(429, { type: "rate_limit_error", code: "too_many_streams", message: "busy" }, { "Retry-After": "1", "Stripe-Should-Retry": "true" }),
        streamOf([frame("evt_2", "resource.created", event(2))]),
      );
      const stream = client().events.stream();
      const iterator = stream[Symbol.asyncIterator]();
      expect((await take(iterator, 2)).map((e) => e.id)).toEqual(["evt_1", "evt_2"]);
      const [refused, resumed] = seen.slice(-2);
      console.log(`${transport}: resumed ${resumed!.at - refused!.at} ms after the 429 with Retry-After: 1`);
      expect(resumed!.at - refused!.at).toBeGreaterThanOrEqual(1_000);
      expect(resumed!.lastEventId).toBe("evt_1");
      stream.close();
    });

    it("throws a 401 after the stream ended (a revoked key) as RMSAuthenticationError, without trying again", async () => {
      reset(
        streamOf([frame("evt_1", "resource.created", event(1))], "end"),
        errorOf(401, { type: "authentication_error", code: "api_key_revoked", message: "revoked" }),
      );
      const stream = client().events.stream({ starting_after: "evt_0" });
      const iterator = stream[Symbol.asyncIterator]();
      expect((await take(iterator, 1)).map((e) => e.id)).toEqual(["evt_1"]);
      const thrown = await iterator.next().catch((error: unknown) => error);
      expect(thrown).toBeInstanceOf(RMSAuthenticationError);
      expect(thrown).toMatchObject({ code: "api_key_revoked", statusCode: 401 });
      expect(seen).toHaveLength(2);
    });

    it("throws a refused cursor (400 on Last-Event-ID) as RMSInvalidRequestError naming it", async () => {
      reset(
        streamOf([frame("evt_1", "resource.created", event(1))], "cut"),
        errorOf(400, { type: "invalid_request_error", code: "parameter_invalid", param: "Last-Event-ID", message: "expired" }),
      );
      const iterator = client().events.stream({ starting_after: "evt_0" })[Symbol.asyncIterator]();
      await take(iterator, 1);
      await expect(iterator.next()).rejects.toMatchObject({ constructor: RMSInvalidRequestError, param: "Last-Event-ID" });
    });

    it("retries a first connection answered 503 like any call, and gives up after maxNetworkRetries", async () => {
      const unavailable = errorOf(503, { type: "api_error", code: "service_unavailable", message: "down" });
      reset(listOf([]), unavailable, listOf([]), streamOf([frame("evt_1", "resource.created", event(1))]));
      const stream = client().events.stream(undefined, { maxNetworkRetries: 1 });
      expect((await take(stream[Symbol.asyncIterator](), 1)).map((e) => e.id)).toEqual(["evt_1"]);
      stream.close();
      reset(listOf([]), unavailable, listOf([]), unavailable);
      await expect(client().events.stream(undefined, { maxNetworkRetries: 1 })[Symbol.asyncIterator]().next()).rejects.toMatchObject({ statusCode: 503 });
      expect(seen).toHaveLength(4);
    });

    it("throws RMSConnectionError when the first connection cannot be made at all", async () => {
      const nowhere = new RMS("sk_test_x", {
        baseUrl: "http://127.0.0.1:1",
        maxNetworkRetries: 0,
        ...(transport === "fetch" ? { fetch: globalThis.fetch } : {}),
      });
      await expect(nowhere.events.stream({ starting_after: "evt_1" })[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(RMSConnectionError);
    });

    it("throws RMSAPIError for a 200 that is not an event stream", async () => {
      reset(listOf(["evt_1"]));
      await expect(client().events.stream({ starting_after: "evt_1" })[Symbol.asyncIterator]().next()).rejects.toBeInstanceOf(RMSAPIError);
    });

    it("close() during a wait for the next item ends the iteration and the connection; break does too", async () => {
      reset(streamOf([frame("evt_1", "resource.created", event(1))]));
      const stream = client().events.stream({ starting_after: "evt_0" });
      const iterator = stream[Symbol.asyncIterator]();
      await take(iterator, 1);
      const pending = iterator.next();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(open.size).toBe(1);
      stream.close();
      expect(await pending).toEqual({ done: true, value: undefined });
      await expect.poll(() => open.size).toBe(0);

      reset(streamOf([frame("evt_1", "resource.created", event(1)), frame("evt_2", "resource.created", event(2))]));
      for await (const item of client().events.stream({ starting_after: "evt_0" })) if (item.id === "evt_1") break;
      await expect.poll(() => open.size).toBe(0);
      expect(seen).toHaveLength(1);
    });

    it("close() while the caller holds an item ends the iteration, though more came in the same chunk", async () => {
      reset(streamOf([frame("evt_1", "resource.created", event(1)) + frame("evt_2", "resource.created", event(2))]));
      const stream = client().events.stream({ starting_after: "evt_0" });
      const iterator = stream[Symbol.asyncIterator]();
      expect((await take(iterator, 1)).map((e) => e.id)).toEqual(["evt_1"]);
      stream.close();
      expect(await iterator.next()).toEqual({ done: true, value: undefined });
      expect(stream.lastEventId).toBe("evt_1");
    });

    it("throws the reason of the caller's signal when it aborts", async () => {
      reset(streamOf([]));
      const controller = new AbortController();
      const iterator = client().events.stream({ starting_after: "evt_0" }, { signal: controller.signal })[Symbol.asyncIterator]();
      const pending = iterator.next();
      setTimeout(() => controller.abort(new Error("enough")), 50);
      await expect(pending).rejects.toThrow("enough");
      await expect.poll(() => open.size).toBe(0);
    });
  });
}

describe("reconnectDelayMs", () => {
  const open = { everOpen: true, maxNetworkRetries: 2, serverRetryMs: undefined };
  const cut = new RMSConnectionError({ type: "connection_error", message: "cut" });
  const answer = (statusCode: number, headers: Record<string, string> = {}, code?: string) =>
    new RMSError({ type: "x", message: "x", statusCode, headers, code });

  it("after a stream that was delivering: a short pause with jitter, doubling while nothing comes, at most 8 s", () => {
    expect(reconnectDelayMs(cut, 1, open, () => 0)).toBe(250);
    expect(reconnectDelayMs(cut, 1, open, () => 1)).toBe(500);
    expect(reconnectDelayMs(cut, 3, open, () => 1)).toBe(2_000);
    expect(reconnectDelayMs(cut, 30, open, () => 1)).toBe(8_000);
  });

  it("never sooner than Retry-After (however long) or the stream's retry:", () => {
    expect(reconnectDelayMs(answer(429, { "retry-after": "3" }, "too_many_streams"), 1, open, () => 1)).toBe(3_000);
    expect(reconnectDelayMs(answer(503, { "retry-after": "120" }), 1, open, () => 1)).toBe(120_000);
    expect(reconnectDelayMs(cut, 1, { ...open, serverRetryMs: 5_000 }, () => 1)).toBe(5_000);
  });

  it("gives up on what no retry mends, and on a first connection after maxNetworkRetries", () => {
    for (const status of [400, 401, 403, 404]) expect(reconnectDelayMs(answer(status), 1, open)).toBeUndefined();
    expect(reconnectDelayMs(answer(503, { "stripe-should-retry": "false" }), 1, open)).toBeUndefined();
    expect(
      reconnectDelayMs(new RMSConnectionError({ type: "connection_error", message: "x", cause: { code: "DEPTH_ZERO_SELF_SIGNED_CERT" } }), 1, open),
    ).toBeUndefined();
    expect(reconnectDelayMs(cut, 3, { ...open, everOpen: false })).toBeUndefined();
    expect(reconnectDelayMs(cut, 2, { ...open, everOpen: false })).toBeDefined();
    expect(reconnectDelayMs(cut, 300, open)).toBeDefined();
  });
});
