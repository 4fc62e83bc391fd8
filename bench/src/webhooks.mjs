// The webhook rows of `npm run bench`: GET and POST again (warm), then with a webhook endpoint on the account
// (relay + fan-out + a worker delivering to the receiver in this process), deliveries per second with 1, 4 and 16
// endpoints (16 against a bare loop to the same 16), a backlog of BENCH_WEBHOOK_BACKLOG events for one endpoint
// drained against the bare loop's time for the same POSTs, the time from each 201 to its delivery, and that time for a well-behaved account alone and beside
// another account's 16 dead endpoints with a backlog (the noisy neighbour). Endpoints are made and switched through
// the public API (`POST /v1/webhook_endpoints`, WEBHOOK_ALLOW_PRIVATE), accounts and keys through the admin service.
import { cpuMeter, createRequests, eventually } from "./load.mjs";
import { dbTop } from "./db-top.mjs";
import { startReceiver } from "./receiver.mjs";

/** The receiver every webhook row delivers to, and the two helpers the rows share around it. */
async function webhookHarness() {
  const receiver = await startReceiver();
  const { received } = receiver;
  const addEndpoint = (client, path) =>
    client.send("POST", "/v1/webhook_endpoints", { form: `url=${encodeURIComponent(receiver.url(path))}&enabled_events[]=*` });
  // Settled: every create followed here has had its resource.created delivered, and no event of these accounts
  // still waits for an endpoint's 2xx (`delivery_success=false`).
  const drain = async (clients, followed = new Map()) =>
    eventually(async () => {
      for (const id of followed.keys()) if (!received.createdAt.has(id)) return false;
      for (const client of clients) if ((await client.page("/v1/events", "delivery_success=false", 1)).data.length > 0) return false;
      return true;
    }, 300_000);
  return { receiver, received, addEndpoint, drain };
}

/** BENCH_ONLY=noisy: the noisy-neighbour rows alone (BENCH_NOISY_ROUNDS rounds of them, default 1). */
export async function noisyOnlyRows({ run, results, stack, newApi, apiUrl, say }) {
  const { receiver, addEndpoint, drain } = await webhookHarness();
  const rounds = Number(process.env.BENCH_NOISY_ROUNDS ?? 1);
  for (let round = 1; round <= rounds; round++) {
    const own = {};
    await noisyNeighbourRows({ run, results: own, stack, newApi, apiUrl, receiver, drain, addEndpoint, say, warm: round === 1 });
    const suffix = round === 1 ? "" : `_${round}`;
    for (const [name, row] of Object.entries(own)) results[`${name}${suffix}`] = row;
    say(
      `noisy round ${round}: calm p50 ${own.calm_create_to_delivery.p50} p99 ${own.calm_create_to_delivery.p99} ms; beside the dead endpoints p50 ${own.calm_create_to_delivery_noisy.p50} p99 ${own.calm_create_to_delivery_noisy.p99} ms (${(own.calm_create_to_delivery_noisy.p99 / own.calm_create_to_delivery.p99).toFixed(2)}x)`,
    );
  }
  await receiver.close();
}

export async function webhookRows({ run, results, stack, api, newApi, apiUrl, resourceId, connections, deliveries, say }) {
  const { KeyKind } = await import("@rms/proto");
  const { receiver, received, addEndpoint, drain } = await webhookHarness();
  const headers = { authorization: `Bearer ${stack.key}` };
  const setStatus = (endpoint, status) => api.send("POST", `/v1/webhook_endpoints/${endpoint.id}`, { form: `status=${status}` });

  // The plain GET and POST again, right before the endpoint exists: the stack is warm now (the first rows run
  // right after its start), so the rows with an endpoint are compared with these.
  await run.http("get_again", `${apiUrl}/v1/resources/${resourceId}`, { headers }, stack.pids());
  const main = await addEndpoint(api, "/main");
  await run.http("get_webhooks", `${apiUrl}/v1/resources/${resourceId}`, { headers }, stack.pids());
  await setStatus(main, "disabled");
  await run.http("post_again", `${apiUrl}/v1/resources`, createRequests(headers), stack.pids());
  await setStatus(main, "enabled");
  // Throughput: creates as fast as they go, every one fanned out to the endpoint and delivered meanwhile.
  const posted = new Map();
  await run.http(
    "post_webhooks",
    `${apiUrl}/v1/resources`,
    createRequests(headers, (id, at) => posted.set(id, at)),
    stack.pids(),
  );
  say("waiting for the deliveries of the POST run");
  await drain([api], posted);

  // Deliveries per second: DELIVERIES creates through core as fast as it takes them, in an account with 1 (then 4)
  // endpoints; timed from the first create to the last delivery.
  const { MongoClient } = await import("mongodb");
  const statusClient = await new MongoClient(stack.mongoUri).connect();
  for (const count of [1, 4, 16]) {
    say(`run deliveries/s with ${count} endpoint${count === 1 ? "" : "s"}`);
    const writesBefore = await writeCommands(statusClient);
    const { account: hooked } = await stack.admin.createAccount({});
    const { secret } = await stack.admin.createKey({ accountId: hooked.id, kind: KeyKind.SECRET, livemode: false });
    const hookedApi = newApi(secret);
    const paths = Array.from({ length: count }, (_, i) => `/fan${count}-${i}`);
    for (const path of paths) await addEndpoint(hookedApi, path);
    const t0 = performance.now();
    let made = 0;
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (made < deliveries) {
          made++;
          await stack.coreResources.createResource({ tenant: { accountId: hooked.id, livemode: false }, name: "hooked" });
        }
      }),
    );
    await eventually(async () => receiver.deliveredTo(paths) >= deliveries * count, 300_000);
    await drain([hookedApi]);
    const seconds = (performance.now() - t0) / 1000;
    hookedApi.close();
    // The database's write commands over the row (the creates, the relay and fan-out, the deliveries), per delivery.
    const writes = (await writeCommands(statusClient)) - writesBefore;
    results[`deliveries_${count}`] = {
      rps: (deliveries * count) / seconds,
      p50: NaN,
      p99: NaN,
      total: deliveries * count,
      errors: 0,
      rss_mb: {},
      write_commands: writes,
      write_commands_per_delivery: writes / (deliveries * count),
    };
  }
  await statusClient.close();

  // The same deliveries without the pipeline: a bare loop of signed POSTs (the worker's signature and headers, over
  // keep-alive connections, as the worker makes them) to the same receiver, as many in flight as one endpoint gets
  // (WEBHOOK_ENDPOINT_CONCURRENCY's default).
  say("run a bare loop of signed POSTs to the receiver");
  results.deliveries_bare = await bareDeliveries(receiver, deliveries);
  say("run a bare loop of signed POSTs to 16 endpoints (paths), 4 in flight each");
  results.deliveries_bare_16 = await bareDeliveriesTo(
    receiver,
    Array.from({ length: 16 }, (_, i) => `/bare16-${i}`),
    deliveries,
  );
  say("run the delivery floor: the bare loop with a delivery's database writes, by hand");
  results.deliveries_floor = await floorDeliveries(receiver, deliveries, stack);

  // Latency: creates through the gateway at a steady fraction of the rate the whole pipeline (relay, fan-out,
  // worker) delivered above: a half and a quarter. Near saturation the backlog, and so the latency, grows with the
  // run; the quarter shows the latency of a pipeline that keeps up. Each 201's resource id with the time it was
  // answered; the receiver notes when its resource.created arrived.
  for (const [name, divisor] of [
    ["create_to_delivery", 2],
    ["create_to_delivery_quarter", 4],
  ]) {
    // (BENCH_ONLY=webhooks runs no `post` row: the same POST just before the endpoint stands in.)
    const steadyRate = Math.max(1, Math.round(Math.min((results.post ?? results.post_again).rps, results.deliveries_1.rps) / divisor));
    results[name] = await steadyCreateToDelivery({
      run,
      stack,
      apiUrl,
      headers,
      rate: steadyRate,
      runName: `post_steady_${divisor}`,
      received,
      drain: (followed) => drain([api], followed),
      say,
    });
  }

  await noisyNeighbourRows({ run, results, stack, newApi, apiUrl, receiver, drain, addEndpoint, say });
  const backlog = Number(process.env.BENCH_WEBHOOK_BACKLOG ?? 100_000);
  if (backlog > 0) await backlogRows({ results, stack, newApi, receiver, addEndpoint, count: backlog, say });
  await receiver.close();
}

/**
 * Creates through the gateway at a steady `rate` for one run; each 201's resource id with the time it was answered,
 * and the receiver notes when its resource.created arrived. Answers the row: the lags' p50 and p99.
 */
async function steadyCreateToDelivery({ run, stack, apiUrl, headers, rate, runName, received, drain, say }) {
  const answeredAt = new Map();
  const top = process.env.BENCH_DB_TOP === "1" ? await dbTop(stack.mongoUri) : null;
  await run.paced(
    runName,
    `${apiUrl}/v1/resources`,
    createRequests(headers, (id, at) => answeredAt.set(id, at)),
    rate,
    stack.pids(),
  );
  say(`waiting for the deliveries of ${runName}`);
  await drain(answeredAt);
  await top?.stop(runName, answeredAt.size);
  const lags = [];
  for (const [id, at] of answeredAt) if (received.createdAt.has(id)) lags.push(received.createdAt.get(id) - at);
  if (process.env.BENCH_LAG_TRACE) {
    const { appendFileSync } = await import("node:fs");
    for (const [id, at] of answeredAt)
      appendFileSync(process.env.BENCH_LAG_TRACE, `${runName} ${Math.round(at)} ${received.createdAt.has(id) ? received.createdAt.get(id) - at : -1}\n`);
  }
  lags.sort((x, y) => x - y);
  return {
    rps: rate,
    p50: lags[Math.floor(lags.length / 2)],
    p99: lags[Math.floor(lags.length * 0.99)],
    total: lags.length,
    errors: answeredAt.size - lags.length,
    rss_mb: {},
  };
}

/**
 * The noisy neighbour (issue 20, CONTRACT.md section 7 "Fair delivery"): a well-behaved account's create -> delivery
 * at a steady BENCH_NOISY_RATE creates/s, first alone, then while another account's 16 endpoints at a server that
 * accepts connections and never answers hold a backlog (an import of BENCH_NOISY_ITEMS items fanned out to them,
 * 10,000 deliveries by default, each attempt running into the 15 s timeout). The dead endpoints are deleted
 * after, and their backlog drained (ended without attempts), before the next rows.
 */
async function noisyNeighbourRows({ run, results, stack, newApi, apiUrl, receiver, drain, addEndpoint, say, warm = false }) {
  const { KeyKind } = await import("@rms/proto");
  const { startSilentServer, queueDeadBacklog } = await import("@rms/cli/stack");
  const rate = Number(process.env.BENCH_NOISY_RATE ?? 20);
  const items = Number(process.env.BENCH_NOISY_ITEMS ?? 625);
  const newKey = async () => {
    const { account } = await stack.admin.createAccount({});
    return (await stack.admin.createKey({ accountId: account.id, kind: KeyKind.SECRET, livemode: false })).secret;
  };
  const calmKey = await newKey();
  const calm = newApi(calmKey);
  await addEndpoint(calm, "/calm");
  const headers = { authorization: `Bearer ${calmKey}` };
  const row = (runName) =>
    steadyCreateToDelivery({ run, stack, apiUrl, headers, rate, runName, received: receiver.received, drain: (followed) => drain([calm], followed), say });
  // On a stack that has delivered nothing yet, the first row also pays for the pipeline's warm-up (BENCH_ONLY=noisy).
  if (warm) await row("post_calm_warm");
  results.calm_create_to_delivery = await row("post_calm");

  const dead = await startSilentServer();
  const noisy = newApi(await newKey());
  say(`noisy neighbour: 16 endpoints that never answer, an import of ${items} items fanned out to them`);
  const { endpoints, job } = await queueDeadBacklog(noisy, dead, { endpoints: 16, items, tag: `bench-noisy-${Date.now()}` });
  await noisy.jobEnd(job, { pollMs: 500, timeoutMs: 600_000 });
  // The row measures the backlog held, not its making: every event of the import fanned out to the 16 endpoints
  // (the relay's copy and fan-out of another tenant's burst is shared work, docs/events.md), and the dead server
  // holding attempts.
  const { WEBHOOK_DELIVERIES_COLLECTION } = await import("@rms/core/bench");
  const { MongoClient } = await import("mongodb");
  const client = await new MongoClient(stack.mongoUri).connect();
  try {
    const deliveries = client.db(stack.databaseName).collection(WEBHOOK_DELIVERIES_COLLECTION);
    await eventually(async () => (await deliveries.countDocuments({ endpoint: { $in: endpoints } })) >= items * endpoints.length, 600_000);
  } finally {
    await client.close();
  }
  await eventually(async () => dead.connections >= 16, 120_000);
  results.calm_create_to_delivery_noisy = await row("post_calm_noisy");

  say("noisy neighbour: deleting the dead endpoints and waiting for their backlog to end");
  for (const id of endpoints) await noisy.send("DELETE", `/v1/webhook_endpoints/${id}`);
  await dead.close();
  await drain([noisy]);
  noisy.close();
  calm.close();
}

/** Write commands the server has run (insert, update, delete, findAndModify; a bulk write counts once per command kind it sends). */
async function writeCommands(client) {
  const { metrics } = await client.db("admin").command({ serverStatus: 1 });
  return ["insert", "update", "delete", "findAndModify"].reduce((sum, name) => sum + Number(metrics.commands[name]?.total ?? 0), 0);
}

/**
 * A signed POST of a resource.created body to `path` at the receiver, over keep-alive connections of its own (one
 * agent per path, as the worker keeps one per endpoint and pinned address: webhooks/connections.ts).
 */
async function signedPoster(receiver, path) {
  const { Agent, request } = await import("node:http");
  const agent = new Agent({ keepAlive: true, maxFreeSockets: 4, scheduling: "lifo" });
  const { signatureHeader } = await import("@rms/core/bench");
  const secret = `whsec_${Buffer.from("bench bare loop secret 32 bytes!").toString("base64")}`;
  const url = new URL(receiver.url(path));
  return (n) =>
    new Promise((resolve, reject) => {
      const eventId = `evt_bare${n}`;
      const body = JSON.stringify({
        id: eventId,
        object: "event",
        type: "resource.created",
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        data: { object: { id: `res_bare${n}`, object: "resource", name: "hooked", status: "active", metadata: {}, created: Math.floor(Date.now() / 1000) } },
      });
      const timestamp = Math.floor(Date.now() / 1000);
      const req = request(
        {
          method: "POST",
          hostname: url.hostname,
          port: url.port,
          path: url.pathname,
          agent,
          headers: {
            "content-type": "application/json",
            "content-length": String(Buffer.byteLength(body)),
            "webhook-id": eventId,
            "webhook-timestamp": String(timestamp),
            "webhook-signature": signatureHeader([secret], eventId, timestamp, body),
          },
        },
        (res) => {
          res.resume();
          res.on("end", () => (res.statusCode < 300 ? resolve() : reject(new Error(`receiver answered ${res.statusCode}`))));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
}

/** `count` deliveries made by `deliver(n)`, as many in flight as one endpoint gets (times `endpoints`): deliveries per second. */
async function deliveriesPerSecond(count, deliver, endpoints = 1) {
  const { DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY } = await import("@rms/core/settings");
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY * endpoints }, async () => {
      while (next < count) await deliver(next++);
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  return { rps: count / seconds, p50: NaN, p99: NaN, total: count, errors: 0, rss_mb: {} };
}

/** `count` signed POSTs of a resource.created body to the receiver, as many in flight as one endpoint gets. */
export async function bareDeliveries(receiver, count) {
  const post = await signedPoster(receiver, "/bare");
  return deliveriesPerSecond(count, post);
}

/** `perPath` signed POSTs to each of `paths` (endpoints at the same receiver), 4 in flight per path: deliveries per second. */
export async function bareDeliveriesTo(receiver, paths, perPath) {
  const posts = await Promise.all(paths.map((path) => signedPoster(receiver, path)));
  return deliveriesPerSecond(perPath * paths.length, (n) => posts[n % posts.length](n), paths.length);
}

/**
 * The backlog (issue 32): `count` events for one endpoint queued while its lane is held (the hold a 429's
 * Retry-After sets, written by hand), then drained by the worker from the moment the hold is lifted to the last
 * delivery; against the bare loop's time for the same number of POSTs. The events come from imports of 10,000
 * items (a job's most) posted at once.
 */
async function backlogRows({ results, stack, newApi, receiver, addEndpoint, count, say }) {
  const { KeyKind } = await import("@rms/proto");
  const { MongoClient } = await import("mongodb");
  const { DELIVERY_QUEUE, WEBHOOK_DELIVERIES_COLLECTION, WEBHOOK_LANES_COLLECTION } = await import("@rms/core/bench");
  const client = await new MongoClient(stack.mongoUri).connect();
  try {
    const db = client.db(stack.databaseName);
    const { account } = await stack.admin.createAccount({});
    const { secret } = await stack.admin.createKey({ accountId: account.id, kind: KeyKind.SECRET, livemode: false });
    const backlogApi = newApi(secret);
    const endpoint = await addEndpoint(backlogApi, "/backlog");
    const lanes = db.collection(WEBHOOK_LANES_COLLECTION);
    await lanes.updateOne(
      { _id: endpoint.id },
      { $set: { account: account.id, livemode: false, turn_at: null, flights: [], failures: 0, hold_until: Date.now() + 86_400_000, version: 0 } },
      { upsert: true },
    );
    say(`backlog: ${count} events for one held endpoint (imports of 10,000 items)`);
    const jobs = [];
    for (let from = 0; from < count; from += 10_000) {
      const items = Array.from({ length: Math.min(10_000, count - from) }, (_, i) => ({ name: `backlog-${from + i}` }));
      jobs.push(await backlogApi.send("POST", "/v1/jobs", { json: { type: "resources.import", params: { items } } }, 300_000));
    }
    for (const job of jobs) await backlogApi.jobEnd(job, { pollMs: 1_000, timeoutMs: 1_800_000 });
    const deliveries = db.collection(WEBHOOK_DELIVERIES_COLLECTION);
    await eventually(async () => (await deliveries.countDocuments({ endpoint: endpoint.id, status: "pending" })) >= count, 600_000);
    say("backlog: lifting the hold, draining");
    const t0 = performance.now();
    // The CPU column: what each process (the receiver is in this one, "load") spends per delivery of the drain.
    const cpu = cpuMeter({ ...stack.pids(), load: process.pid });
    await lanes.updateOne({ _id: endpoint.id }, { $set: { hold_until: 0, turn_at: Date.now() } });
    await DELIVERY_QUEUE.signal(db, 1);
    await eventually(async () => receiver.deliveredTo(["/backlog"]) >= count, 3_600_000);
    const seconds = (performance.now() - t0) / 1000;
    results.backlog_drain = {
      rps: count / seconds,
      p50: NaN,
      p99: NaN,
      total: count,
      errors: 0,
      seconds,
      rss_mb: {},
      cpu_ms_per_request: perDelivery(cpu.stop(), count),
    };
    backlogApi.close();
    say("backlog: the bare loop, the same number of POSTs");
    const bareCpu = cpuMeter({ load: process.pid });
    const bare = await bareDeliveriesTo(receiver, ["/backlog-bare"], count);
    results.backlog_bare = { ...bare, seconds: count / bare.rps, cpu_ms_per_request: perDelivery(bareCpu.stop(), count) };
    const floorCount = Math.min(count, BATCHED_FLOOR_DELIVERIES);
    say(`backlog: the batched delivery floor, ${floorCount} deliveries`);
    const floorCpu = cpuMeter({ ...stack.pids(), load: process.pid });
    const floor = await floorBatchedDeliveries(receiver, floorCount, stack);
    results.deliveries_floor_batched = { ...floor, cpu_ms_per_request: perDelivery(floorCpu.stop(), floorCount) };
  } finally {
    await client.close();
  }
}

/** CPU ms per delivery of each process, from a cpuMeter's totals over `count` deliveries. */
function perDelivery(cpuMs, count) {
  return Object.fromEntries(Object.entries(cpuMs).map(([name, ms]) => [name, ms / Math.max(1, count)]));
}

/** Deliveries of the batched floor: enough for its steady pace (claims of 32 from an index), fewer than the backlog's for the run's time. */
const BATCHED_FLOOR_DELIVERIES = 20_000;

/**
 * Items added while a flush is under way go in the next flush, one write for all (the group commit of
 * webhook-deliveries/bookkeeping.ts, by hand); each add answers when its flush is written.
 */
function groupCommit(flush) {
  let waiting = [];
  let flushing = false;
  const drain = async () => {
    while (waiting.length > 0) {
      const group = waiting;
      waiting = [];
      try {
        await flush(group.map((g) => g.item));
        for (const g of group) g.resolve();
      } catch (error) {
        for (const g of group) g.reject(error);
      }
    }
    flushing = false;
  };
  return {
    add: (item) =>
      new Promise((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        if (flushing) return;
        flushing = true;
        queueMicrotask(drain);
      }),
  };
}

/**
 * The collections of a floor run (`bench_<name>_*`) with `count` pending deliveries of one endpoint at `url`, each with
 * its event waiting for that endpoint, written 10,000 at a time; the claim's index on the deliveries.
 */
async function floorFixture(db, name, count, url) {
  const collection = (kind) => db.collection(`bench_${name}_${kind}`);
  const [lanes, deliveries, events, attempts, endpoints] = ["lanes", "deliveries", "events", "attempts", "endpoints"].map(collection);
  await deliveries.createIndex({ endpoint: 1, due_at: 1 }, { partialFilterExpression: { status: "pending" } });
  const run = `${process.pid}-${Date.now()}`;
  const endpoint = `we_${name}${run}`;
  await endpoints.insertOne({ _id: endpoint, url, status: "enabled" });
  await lanes.insertOne({ _id: endpoint, flights: 0, turn_at: 0 });
  for (let from = 0; from < count; from += 10_000) {
    const n = Array.from({ length: Math.min(10_000, count - from) }, (_, i) => from + i);
    await events.insertMany(n.map((i) => ({ _id: `evt_${name}${run}-${i}`, type: "resource.created", pending_endpoints: [endpoint] })));
    await deliveries.insertMany(
      n.map((i) => ({ _id: `wd_${name}${run}-${i}`, endpoint, event: `evt_${name}${run}-${i}`, status: "pending", due_at: i, lease_until: 0, epoch: 0 })),
    );
  }
  return { lanes, deliveries, events, attempts, endpoints, endpoint, run };
}

/**
 * The batched delivery floor (issue 32): the bare loop wrapped in the batched design's database work, by hand, on
 * the stack's database (majority-acknowledged, journaled, as core's client), with none of the worker's own code.
 * 4 flights at once (one endpoint's places), each in turn: the lane's turn (one findOneAndUpdate); up to 32 due
 * deliveries leased in three round trips (their ids, one updateMany, a read back by lease token); the endpoint and
 * the events (two reads at once); then the POSTs one after another, each one's writes joining groups flushed while
 * the next POSTs go (the attempts in one insertMany, the events' `$pull` and the deliveries' deletes in one bulk
 * write each); the flight's end is the lane's release, grouped too. The bound of the design with no code around it.
 */
export async function floorBatchedDeliveries(receiver, count, { mongoUri, databaseName }) {
  const { MongoClient } = await import("mongodb");
  const { DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY } = await import("@rms/core/settings");
  const client = await new MongoClient(mongoUri, { writeConcern: { w: "majority", journal: true }, readConcern: { level: "local" } }).connect();
  try {
    const { lanes, deliveries, events, attempts, endpoints, endpoint } = await floorFixture(
      client.db(databaseName),
      "floorb",
      count,
      receiver.url("/floor-batched"),
    );
    const post = await signedPoster(receiver, "/floor-batched");
    const attemptWrites = groupCommit((items) => attempts.insertMany(items, { ordered: false }));
    const pulls = groupCommit((items) =>
      events.bulkWrite(
        items.map((id) => ({ updateOne: { filter: { _id: id }, update: { $pull: { pending_endpoints: endpoint } } } })),
        { ordered: false },
      ),
    );
    const deletes = groupCommit((items) =>
      deliveries.bulkWrite(
        items.map((d) => ({ deleteOne: { filter: { _id: d._id, epoch: d.epoch } } })),
        { ordered: false },
      ),
    );
    const flightEnds = groupCommit((items) => lanes.updateOne({ _id: endpoint }, { $inc: { flights: -items.length }, $set: { turn_at: Date.now() } }));
    let sent = 0;
    const flight = async (place) => {
      for (let round = 0; ; round++) {
        const now = Date.now();
        await lanes.findOneAndUpdate({ _id: endpoint }, { $inc: { flights: 1 }, $set: { turn_at: now } });
        const token = `${place}-${round}`;
        const free = { endpoint, status: "pending", due_at: { $lte: Number.MAX_SAFE_INTEGER }, lease_until: { $lte: now } };
        const ids = (await deliveries.find(free, { sort: { due_at: 1 }, limit: 32, projection: { _id: 1 } }).toArray()).map((d) => d._id);
        if (ids.length === 0) return flightEnds.add(place);
        await deliveries.updateMany({ $and: [{ _id: { $in: ids } }, free] }, { $set: { lease_until: now + 60_000, lease_token: token }, $inc: { epoch: 1 } });
        const mine = await deliveries.find({ _id: { $in: ids }, lease_token: token }, { sort: { due_at: 1 } }).toArray();
        await Promise.all([endpoints.findOne({ _id: endpoint }), events.find({ _id: { $in: mine.map((d) => d.event) } }).toArray()]);
        const written = [];
        for (const delivery of mine) {
          await post(sent++);
          written.push(
            (async () => {
              await attemptWrites.add({ _id: `wa_${delivery._id}`, endpoint, event: delivery.event, status: "succeeded", response_status: 200 });
              await pulls.add(delivery.event);
              await deletes.add(delivery);
            })(),
          );
        }
        await Promise.all(written);
        await flightEnds.add(place);
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: DEFAULT_WEBHOOK_ENDPOINT_CONCURRENCY }, (_, place) => flight(place)));
    const seconds = (performance.now() - t0) / 1000;
    return { rps: sent / seconds, p50: NaN, p99: NaN, total: sent, errors: 0, seconds, rss_mb: {} };
  } finally {
    await client.close();
  }
}

/**
 * The delivery floor: the bare loop, each POST wrapped in the database work a delivery makes in the worker, by
 * hand, in the same order, on the stack's database (majority-acknowledged, journaled, as core's client): the
 * lane's turn and the delivery's lease (two findOneAndUpdate), the endpoint and the event (two reads at once), the
 * POST, then the attempt's insert, the event's `$pull` and the delivery's delete, with the lane's release beside
 * the last two. What a delivery costs beyond this is the worker's own (webhook-deliveries/queue.ts).
 */
export async function floorDeliveries(receiver, count, { mongoUri, databaseName }) {
  const { MongoClient } = await import("mongodb");
  const client = await new MongoClient(mongoUri, { writeConcern: { w: "majority", journal: true }, readConcern: { level: "local" } }).connect();
  try {
    const { lanes, deliveries, events, attempts, endpoints, endpoint, run } = await floorFixture(
      client.db(databaseName),
      "floor",
      count,
      receiver.url("/floor"),
    );
    const post = await signedPoster(receiver, "/floor");
    return await deliveriesPerSecond(count, async (n) => {
      const now = Date.now();
      await lanes.findOneAndUpdate({ _id: endpoint }, { $inc: { flights: 1 }, $set: { turn_at: now } });
      const delivery = await deliveries.findOneAndUpdate(
        { endpoint, status: "pending", due_at: { $lte: Number.MAX_SAFE_INTEGER }, lease_until: { $lte: now } },
        { $set: { lease_until: now + 60_000 }, $inc: { epoch: 1 } },
        { sort: { due_at: 1 }, returnDocument: "after" },
      );
      await Promise.all([endpoints.findOne({ _id: endpoint }), events.findOne({ _id: delivery.event })]);
      await post(n);
      await attempts.insertOne({ _id: `wa_floor${run}-${n}`, endpoint, event: delivery.event, status: "succeeded", response_status: 200 });
      await Promise.all([
        (async () => {
          await events.updateOne({ _id: delivery.event }, { $pull: { pending_endpoints: endpoint } });
          await deliveries.deleteOne({ _id: delivery._id, epoch: delivery.epoch });
        })(),
        lanes.updateOne({ _id: endpoint }, { $inc: { flights: -1 }, $set: { turn_at: Date.now() } }),
      ]);
    });
  } finally {
    await client.close();
  }
}
