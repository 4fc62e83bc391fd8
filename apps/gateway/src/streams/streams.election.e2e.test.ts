import { startReplicaSet, type RunningReplicaSet } from "@rms/test-db";
import { eventually } from "@rms/test-db/testkit";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startStack, withSecretKey, type Stack } from "../testutil/harness.js";
import { followSse, openSse } from "../testutil/sse.js";

// Streams across a replica-set election (docs/streams.md): on a three-member set whose primary steps down while
// events are made, a stream that stays open gets each event once (core's watch resumes after the election), and a
// stream resumed with Last-Event-ID after a disconnect spanning the election gets every event made meanwhile, once,
// in the same order.

const ELECTION_TIMEOUT_MS = 2_000;
let set: RunningReplicaSet;
let stack: Stack;
let key: string;
beforeAll(async () => {
  set = await startReplicaSet({ members: 3, electionTimeoutMillis: ELECTION_TIMEOUT_MS });
  stack = await startStack({ coreMongoUri: set.uri, gateway: { mongoUri: set.uri } });
  ({ key } = await withSecretKey(stack));
}, 300_000);
afterAll(async () => {
  await stack?.stop();
  await set?.stop();
}, 120_000);

/** A create under its own Idempotency-Key, retried through the election (503, an unknown outcome, a key in flight). */
async function create(name: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const response = await stack.api.post("/v1/resources", { key, form: { name }, headers: { "Idempotency-Key": `election-${name}` } }).catch(() => undefined);
    if (response?.status === 201) return response.json.id as string;
    expect(attempt, `${name}: ${response?.status} ${JSON.stringify(response?.json)}`).toBeLessThan(300);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

it("a primary steps down while events are made: an open stream gets each once, and one resumed with Last-Event-ID after the election gets every event " +
  "made while away, once, in the same order", async () => {
  const live = followSse(stack.gateway.httpsPort, stack.gateway.certificate, "/v1/events/stream", { key });
  const away = await openSse(stack.gateway.httpsPort, stack.gateway.certificate, "/v1/events/stream", { key });
  const seed = await create("seed");
  await eventually(() => expect(away.events.map((e) => e.data.data.object.id)).toContain(seed), { timeoutMs: 30_000 });
  const last = away.events.at(-1)!.id;
  away.close();

  const made: string[] = [];
  const writers = Array.from({ length: 3 }, async (_, w) => {
    for (let n = 0; n < 20; n++) made.push(await create(`w${w}-${n}`));
  });
  // The election, once some events are on their way.
  await eventually(() => expect(made.length).toBeGreaterThanOrEqual(10), { timeoutMs: 60_000 });
  const primary = await set.primary(10_000);
  const admin = new MongoClient(`mongodb://${primary!.host}/?directConnection=true`);
  await admin.db("admin").command({ replSetStepDown: 10, secondaryCatchUpPeriodSecs: 5 });
  await admin.close();
  await eventually(async () => expect((await set.primary())?.host).not.toBe(primary!.host), { timeoutMs: 60_000 });
  await Promise.all(writers);
  expect(made).toHaveLength(60);

  const resumed = await openSse(stack.gateway.httpsPort, stack.gateway.certificate, "/v1/events/stream", { key, lastEventId: last });
  await eventually(() => expect(resumed.events.length).toBeGreaterThanOrEqual(60), { timeoutMs: 60_000 });
  const resumedIds = resumed.events.map((e) => e.id);
  expect(new Set(resumedIds).size).toBe(resumedIds.length);
  expect(resumed.events.map((e) => e.data.data.object.id).sort()).toEqual([...made].sort());

  await eventually(() => expect(live.events.length).toBeGreaterThanOrEqual(61), { timeoutMs: 60_000 });
  const liveIds = live.events.map((e) => e.id);
  expect(new Set(liveIds).size).toBe(liveIds.length);
  expect(liveIds.slice(liveIds.indexOf(last) + 1)).toEqual(resumedIds);
  process.stderr.write(
    `election: ${made.length} events made across it; the open stream got ${liveIds.length} over ${live.connections} connection(s), the resumed one ` +
      `${resumedIds.length}\n`,
  );
  resumed.close();
  live.close();
}, 300_000);
