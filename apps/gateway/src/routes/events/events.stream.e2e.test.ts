import { EventService, bearerMetadata, createClient } from "@rms/proto";
import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startStack, withSecretKey, type Stack } from "../../testutil/harness.js";
import { openSse, type SseStream } from "../../testutil/sse.js";

// GET /v1/events/stream (CONTRACT.md section 14; docs/streams.md): events as Server-Sent Events, oldest first, each
// once; resumed with Last-Event-ID (or starting_after) after a disconnect, the events made meanwhile come, in the
// order the stream gives (the order their copies committed), none twice.

let stack: Stack;
let key: string;
let accountId: string;
const opened: SseStream[] = [];
beforeAll(async () => {
  stack = await startStack();
  const made = await withSecretKey(stack);
  key = made.key;
  accountId = made.account.id;
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

const create = async (name: string, k = key) => {
  const response = await stack.api.post("/v1/resources", { key: k, form: { name } });
  expect(response.status).toBe(201);
  return response.json.id as string;
};

/** The order a stream gives after `id`: core's log of the tenant read by position (what the stream reads to catch up). */
async function logAfter(id: string): Promise<string[]> {
  const events = createClient(EventService, stack.coreAddress, { metadata: bearerMetadata(ADMIN_TOKEN) });
  try {
    const ids: string[] = [];
    let read = await events.readEventLog({ tenant: { accountId, livemode: false }, after: { case: "afterEvent", value: id } });
    for (;;) {
      ids.push(...read.events.map((e) => e.event!.id));
      if (read.through >= read.head) return ids;
      read = await events.readEventLog({ tenant: { accountId, livemode: false }, after: { case: "afterPosition", value: read.through } });
    }
  } finally {
    events.close();
  }
}

describe("GET /v1/events/stream", () => {
  it("sends the events made after the connection as id, event and data (the event as GET /v1/events/{id} answers it), with SSE headers", async () => {
    const stream = await open("/v1/events/stream");
    expect(stream.status).toBe(200);
    expect(stream.headers["content-type"]).toBe("text/event-stream; charset=utf-8");
    expect(stream.headers["cache-control"]).toBe("no-cache, no-transform");
    const ids = [await create("one"), await create("two")];
    await eventually(() => expect(stream.events).toHaveLength(2));
    expect(stream.events.map((e) => e.data.data.object.id).sort()).toEqual([...ids].sort());
    for (const event of stream.events) {
      expect(event.event).toBe("resource.created");
      expect(event.id).toBe(event.data.id);
      const retrieved = await stack.api.get(`/v1/events/${event.id}`, { key });
      expect(retrieved.json).toEqual(event.data);
    }
    stream.close();
  });

  it("resumed with Last-Event-ID after a disconnect of 10 s during which 200 events were made, gets each of them once, in the stream's order", async () => {
    const first = await open("/v1/events/stream");
    const seed = await create("before");
    await eventually(() => expect(first.events.map((e) => e.data.data.object.id)).toContain(seed));
    const last = first.events.at(-1)!.id;
    first.close();

    // 200 events over 10 s: creates and updates from four clients at once, so copies commit out of id order.
    const started = Date.now();
    const made: Promise<unknown>[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      made.push(
        (async () => {
          for (let n = 0; n < 25; n++) {
            const id = await create(`away-${i}-${n}`);
            ids.push(id);
            expect((await stack.api.post(`/v1/resources/${id}`, { key, form: { name: `away-${i}-${n}-renamed` } })).status).toBe(200);
            // Spread over the 10 s of the disconnect (a load's pace, not a wait for a condition).
            const due = started + ((i + 4 * n + 1) * 10_000) / 100;
            // A timer may fire a millisecond before Date.now() reaches its due time: wait until it has.
            while (Date.now() < due) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
          }
        })(),
      );
    }
    await Promise.all(made);
    const away = Date.now() - started;
    expect(away).toBeGreaterThanOrEqual(10_000);

    const resumed = await open("/v1/events/stream", { lastEventId: last });
    await eventually(() => expect(resumed.events.length).toBeGreaterThanOrEqual(200), { timeoutMs: 30_000 });
    const received = resumed.events.map((e) => e.id);
    expect(new Set(received).size).toBe(received.length);
    expect(received).toEqual(await logAfter(last));
    // Every change made while away, once: 100 creates and 100 updates of those resources.
    const changes = resumed.events.map((e) => `${e.event} ${e.data.data.object.id}`).sort();
    expect(changes).toEqual(ids.flatMap((id) => [`resource.created ${id}`, `resource.updated ${id}`]).sort());
    // An object's own changes keep their order (sequence 0, then 1).
    for (const id of ids) expect(resumed.events.filter((e) => e.data.data.object.id === id).map((e) => e.data.sequence)).toEqual([0, 1]);
    // starting_after gives the same: the order is one a resume can continue exactly.
    const again = await open(`/v1/events/stream?starting_after=${last}`);
    await eventually(() => expect(again.events.length).toBeGreaterThanOrEqual(200), { timeoutMs: 30_000 });
    expect(again.events.map((e) => e.id).slice(0, 200)).toEqual(received.slice(0, 200));
    process.stderr.write(`resume after ${away} ms away: ${received.length} events, each once, in the log's order\n`);
    resumed.close();
    again.close();
  }, 120_000);

  it("filters by types[] (exact or prefix.*) and object, live and on resume", async () => {
    const target = await create("target");
    // Its creation's event is copied before the streams start (else they would rightly get it too).
    await eventually(async () => expect((await stack.api.get(`/v1/events?object=${target}`, { key })).json.data).toHaveLength(1));
    const byType = await open("/v1/events/stream?types[]=resource.updated");
    const byPrefix = await open("/v1/events/stream?types[]=resource.*");
    const byObject = await open(`/v1/events/stream?object=${target}`);
    await create("other");
    await stack.api.post(`/v1/resources/${target}`, { key, form: { name: "target-renamed" } });
    await eventually(() => {
      expect(byType.events.map((e) => e.event)).toEqual(["resource.updated"]);
      expect(byPrefix.events.map((e) => e.event).sort()).toEqual(["resource.created", "resource.updated"]);
      expect(byObject.events.map((e) => e.event)).toEqual(["resource.updated"]);
    });
    // Resumed from the first event the prefix stream saw, by object: what followed of the target (its update).
    const from = byPrefix.events[0]!.id;
    const resumed = await open(`/v1/events/stream?object=${target}&starting_after=${from}`);
    await eventually(() => expect(resumed.events.map((e) => e.event)).toEqual(["resource.updated"]));
    for (const stream of [byType, byPrefix, byObject, resumed]) stream.close();
  });

  it("refuses a malformed Last-Event-ID or starting_after, an event of another account, and keys without events:read", async () => {
    const bad = await open("/v1/events/stream", { lastEventId: "evt_nope" });
    expect([bad.status, bad.error.code, bad.error.param]).toEqual([400, "parameter_invalid", "Last-Event-ID"]);
    const badQuery = await open("/v1/events/stream?starting_after=res_1");
    expect([badQuery.status, badQuery.error.param]).toEqual([400, "starting_after"]);
    const other = await withSecretKey(stack);
    await create("someone else's", other.key);
    const theirs = await eventually(async () => {
      const list = await stack.api.get("/v1/events", { key: other.key });
      expect(list.json.data).toHaveLength(1);
      return list.json.data[0].id as string;
    });
    const foreign = await open("/v1/events/stream", { lastEventId: theirs });
    expect([foreign.status, foreign.error.code, foreign.error.param]).toEqual([400, "parameter_invalid", "Last-Event-ID"]);
    const publishable = await other.account.key("publishable");
    const refused = await open("/v1/events/stream", { key: publishable.secret });
    expect([refused.status, refused.error.code]).toEqual([403, "publishable_key_read_only"]);
  });
});
