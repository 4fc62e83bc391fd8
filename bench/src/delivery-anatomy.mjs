// Where a create's way to its webhook goes, hop by hop, on a calm stack (issue 32's create -> delivery latency):
// `node src/delivery-anatomy.mjs` from bench/ (Node 24, after a build). It starts a stack of its own, adds one
// endpoint at a local receiver, makes ANATOMY_CREATES creates one after another (ANATOMY_GAP_MS apart), and times
// each hop from the database's own clock: a change stream over the whole database gives every write's `wallTime`
// (the resource's insert, the deliveries' insert, the queue's wake-up, the first lane write after it, the delivery's
// lease, the event's copy, the attempt's record); the receiver and the client give the 201 and the arrival.
// Prints p50, p90 and the largest of each hop. Not part of `npm run bench`: a probe for a reader of the pipeline.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startReceiver } from "./receiver.mjs";
import { freePorts, startStack, stopProcess } from "./stack.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const creates = Number(process.env.ANATOMY_CREATES ?? 200);
const gapMs = Number(process.env.ANATOMY_GAP_MS ?? 50);
const work = mkdtempSync(join(tmpdir(), "rms-anatomy-"));
const [httpsPort, corePort, metricsPort, coreMetricsPort] = await freePorts(4);
let database;
const children = [];
const own = { database: (d) => (database = d), child: (c) => children.push(c) };
const say = (m) => console.error(`anatomy: ${m}`);

const stack = await startStack({ root, work, ports: { httpsPort, corePort, metricsPort, coreMetricsPort }, own, say });
const { PublicApi } = await import("@rms/cli/stack");
const { MongoClient } = await import("mongodb");
const api = new PublicApi(stack.dataDir, httpsPort, stack.key);
const receiver = await startReceiver();
const client = await new MongoClient(stack.mongoUri).connect();
try {
  await api.send("POST", "/v1/webhook_endpoints", { form: `url=${encodeURIComponent(receiver.url("/anatomy"))}&enabled_events[]=*` });
  const writes = [];
  const stream = client
    .db(stack.databaseName)
    .watch([], { fullDocument: "updateLookup" })
    .on("change", (c) => writes.push({ coll: c.ns?.coll, op: c.operationType, id: c.documentKey?._id, wall: c.wallTime?.getTime(), doc: c.fullDocument }));
  await new Promise((r) => setTimeout(r, 1_000));
  say(`${creates} creates, ${gapMs} ms apart`);
  const now = () => performance.timeOrigin + performance.now();
  const posted = new Map();
  for (let i = 0; i < creates; i++) {
    const sentAt = now();
    const { id } = await api.send("POST", "/v1/resources", { form: `name=anatomy-${i}` });
    posted.set(id, { sentAt, answeredAt: now() });
    await new Promise((r) => setTimeout(r, gapMs));
  }
  await new Promise((r) => setTimeout(r, 3_000));
  await stream.close();

  const hops = new Map();
  const add = (name, from, to) => {
    if (from === undefined || to === undefined) return;
    hops.set(name, [...(hops.get(name) ?? []), to - from]);
  };
  const first = (coll, op, match) => writes.find((w) => w.coll === coll && w.op === op && match(w));
  for (const [id, { sentAt, answeredAt }] of posted) {
    const resource = first("resources", "insert", (w) => w.id === id)?.wall;
    const event = first("events", "insert", (w) => (w.doc?.object?.id ?? w.doc?.data?.object?.id) === id);
    const delivery = event && first("webhook_deliveries", "insert", (w) => w.doc?.event === event.id);
    const signal = delivery && first("webhook_queue", "update", (w) => w.wall >= delivery.wall);
    const lane = signal && first("webhook_lanes", "update", (w) => w.wall >= signal.wall);
    const leased = delivery && first("webhook_deliveries", "update", (w) => w.id === delivery.id);
    const attempt = event && first("webhook_attempts", "insert", (w) => w.doc?.event === event.id);
    const arrived = receiver.received.createdAt.has(id) ? performance.timeOrigin + receiver.received.createdAt.get(id) : undefined;
    add("POST sent -> resource committed", sentAt, resource);
    add("resource committed -> 201 received", resource, answeredAt);
    add("resource committed -> deliveries queued (relay, fan-out)", resource, delivery?.wall);
    add("deliveries queued -> event copied", delivery?.wall, event?.wall);
    add("deliveries queued -> queue woken", delivery?.wall, signal?.wall);
    add("queue woken -> first lane write (a worker's claim)", signal?.wall, lane?.wall);
    add("first lane write -> delivery leased", lane?.wall, leased?.wall);
    add("delivery leased -> POST arrived", leased?.wall, arrived);
    add("POST arrived -> attempt recorded", arrived, attempt?.wall);
    add("201 received -> POST arrived (the bench's create -> delivery)", answeredAt, arrived);
  }
  const at = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
  console.log(`| hop (${posted.size} creates, ${gapMs} ms apart) | n | p50 ms | p90 ms | max ms |\n|---|---|---|---|---|`);
  for (const [name, values] of hops) {
    const sorted = values.sort((a, b) => a - b);
    console.log(`| ${name} | ${sorted.length} | ${at(sorted, 0.5).toFixed(1)} | ${at(sorted, 0.9).toFixed(1)} | ${sorted.at(-1).toFixed(1)} |`);
  }
} finally {
  await client.close();
  api.close();
  await receiver.close();
  for (const child of children) await stopProcess(child);
  await database?.stop();
  rmSync(work, { recursive: true, force: true });
}
