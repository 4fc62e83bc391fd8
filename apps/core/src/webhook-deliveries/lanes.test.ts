import { pino } from "pino";
import { Registry } from "prom-client";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { newId } from "../ids.js";
import { DEFAULT_SETTINGS } from "../settings.js";
import { newTenant, thingsCollection } from "../testutil/storage.js";
import { FAILING_AFTER, FLIGHT_MARGIN_MS, Lanes, laneOutcome, repairLanes, wakeLanes, WEBHOOK_LANES_COLLECTION, type LaneDocument } from "./lanes.js";
import { WEBHOOK_DELIVERIES_COLLECTION, type AttemptDocument, type DeliveryDocument } from "./model.js";
import { DELIVERY_LEASE_MS, DeliveryQueue, ensureDeliveryIndexes, type ClaimedDelivery } from "./queue.js";

/**
 * The fair claim (docs/webhooks.md, "Fair delivery"), at the level of the claim and the lanes: no attempt is
 * made here (the worker tests make them); a test ends a claimed delivery as the worker would, the delivery
 * first and then its flight, with the outcome its attempt would have had. The clock is the test's.
 */

let t: Awaited<ReturnType<typeof thingsCollection>>;
let clock = 0;
const now = () => clock;
const logger = pino({ level: "silent" });

beforeAll(async () => {
  t = await thingsCollection();
  await ensureDeliveryIndexes(t.db);
});
afterAll(() => t?.close());
beforeEach(async () => {
  // The real time, not an arbitrary one: lanes carry `expires_at` from this clock, and the server's TTL monitor
  // (every 60 s) would delete lanes stamped in 1970 in the middle of a test.
  clock = Date.now();
  await t.db.collection(WEBHOOK_DELIVERIES_COLLECTION).deleteMany({});
  await t.db.collection(WEBHOOK_LANES_COLLECTION).deleteMany({});
});

const deliveries = () => t.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
const lanes = () => t.db.collection<LaneDocument>(WEBHOOK_LANES_COLLECTION);

function queue(owner: string, concurrency = 4): DeliveryQueue {
  return new DeliveryQueue({
    db: t.db,
    logger,
    owner,
    settings: { ...DEFAULT_SETTINGS, webhookEndpointConcurrency: concurrency },
    metrics: new Registry(),
    now,
  });
}

/** `count` deliveries to `endpoint`, the last due at `dueAt` (one ms apart), queued as fan-out queues them: inserted, then the lane woken. */
async function queued(endpoint: string, count: number, dueAt = clock): Promise<DeliveryDocument[]> {
  const tenant = newTenant();
  const docs = Array.from(
    { length: count },
    (_, i): DeliveryDocument => ({
      _id: `${newId("evt", dueAt)}-${i}:${endpoint}`,
      ...tenant,
      event: newId("evt", dueAt),
      endpoint,
      trigger: "scheduled",
      status: "pending",
      due_at: dueAt - count + 1 + i,
      attempts: 0,
      first_failed_at: null,
      lease_owner: null,
      lease_until: null,
      epoch: 0,
      created: Math.floor(dueAt / 1000),
    }),
  );
  await deliveries().insertMany(docs);
  await wakeLanes(t.db, docs, clock);
  return docs;
}

/** Claims until the queue answers null; what it took, in order. `tickMs`: the clock moves on before each claim. */
async function drain(q: DeliveryQueue, max = 1_000, tickMs = 0): Promise<ClaimedDelivery[]> {
  const taken: ClaimedDelivery[] = [];
  for (let i = 0; i < max; i++) {
    clock += tickMs;
    const claimed = await q.claim();
    if (!claimed) break;
    taken.push(claimed);
  }
  return taken;
}

function attempt(fields: Partial<AttemptDocument>): AttemptDocument {
  return { status: "failed", error: null, response_status: null, retry_after: null, ...fields } as AttemptDocument;
}

/** Ends a claimed delivery as the worker does: the delivery (a success deletes it), then its flight, told the attempt's outcome. */
async function finish(claimed: ClaimedDelivery, outcome: AttemptDocument | null): Promise<void> {
  if (outcome?.status === "succeeded") await deliveries().deleteOne({ _id: claimed.delivery._id });
  else await deliveries().updateOne({ _id: claimed.delivery._id }, { $set: { lease_owner: null, lease_until: null, due_at: clock } });
  await new Lanes(t.db).release(claimed.delivery.endpoint, claimed.flight.id, outcome, clock);
}

const inFlight = async (endpoint: string) => (await lanes().findOne({ _id: endpoint }))!.flights.filter((f) => f.until > clock).length;

describe("the fair claim", () => {
  it("an endpoint has at most WEBHOOK_ENDPOINT_CONCURRENCY deliveries in flight, across workers; an ended one frees its place", async () => {
    await queued("we_busy", 10);
    const [one, two] = [queue("worker-1"), queue("worker-2")];
    const taken = [...(await drain(one, 3)), ...(await drain(two)), ...(await drain(one))];
    expect(taken).toHaveLength(4);
    expect(new Set(taken.map((c) => c.delivery._id)).size).toBe(4);
    expect(await inFlight("we_busy")).toBe(4);
    // Full: no turn until a flight ends.
    expect((await lanes().findOne({ _id: "we_busy" }))!.turn_at).toBeGreaterThan(clock);

    await finish(taken[0]!, attempt({ status: "succeeded" }));
    const next = await drain(two);
    expect(next).toHaveLength(1);
    expect(await inFlight("we_busy")).toBe(4);
  });

  it("a worker that dies holding flights frees them when its leases end: another worker then takes the same deliveries again", async () => {
    await queued("we_orphaned", 6);
    const dead = await drain(queue("dying-worker"));
    expect(dead).toHaveLength(4);
    const survivor = queue("survivor");
    expect(await drain(survivor)).toHaveLength(0);
    // Past the leases (and the flights' margin): the orphaned deliveries come first, by due time.
    clock += DELIVERY_LEASE_MS + FLIGHT_MARGIN_MS + 1;
    const retaken = await drain(survivor);
    expect(retaken.map((c) => c.delivery._id)).toEqual(dead.map((c) => c.delivery._id));
    expect(retaken.every((c) => c.delivery.epoch === 2)).toBe(true);
  });

  it("takes endpoints in turn, not by due time: an endpoint with one delivery is served after at most one turn of each other endpoint", async () => {
    // 8 endpoints with 50 old deliveries each, then one with a single new delivery; limits high enough not to matter.
    const busy = Array.from({ length: 8 }, (_, i) => `we_backlog_${i}`);
    for (const endpoint of busy) {
      await queued(endpoint, 50, clock - 3_600_000);
      clock += 1;
    }
    await queued("we_newcomer", 1, clock);
    const order = (await drain(queue("worker", 64), 40, 1)).map((c) => c.delivery.endpoint);
    // By due time it would be the 401st; in turn it is within the first round.
    expect(order.indexOf("we_newcomer")).toBeLessThanOrEqual(busy.length);
    // Round robin: each round serves every endpoint once.
    expect(new Set(order.slice(0, 9)).size).toBe(9);
    expect(new Set(order.slice(9, 17))).toEqual(new Set(busy));
  });

  it(`an endpoint whose last ${FAILING_AFTER} attempts failed (timeouts, refusals, 5xx) is tried one delivery at a time until one succeeds`, async () => {
    await queued("we_failing", 30);
    const q = queue("worker");
    const failures = [attempt({ error: "timeout" }), attempt({ error: "connection_failed" }), attempt({ error: "http_error", response_status: 503 })];
    for (let n = 0; n < FAILING_AFTER; n++) {
      const [claimed] = await drain(q, 1);
      await finish(claimed!, failures[n % failures.length]!);
    }
    expect((await lanes().findOne({ _id: "we_failing" }))!.failures).toBe(FAILING_AFTER);
    const [lone] = await drain(q);
    expect(lone).toBeDefined();
    expect(await drain(q)).toHaveLength(0);
    expect(await inFlight("we_failing")).toBe(1);
    // A 4xx is not what makes an endpoint failing, nor does it end the streak.
    await finish(lone!, attempt({ error: "http_error", response_status: 400 }));
    const [again] = await drain(q);
    expect(await drain(q)).toHaveLength(0);
    await finish(again!, attempt({ status: "succeeded" }));
    expect((await lanes().findOne({ _id: "we_failing" }))!.failures).toBe(0);
    expect(await drain(q)).toHaveLength(4);
  });

  it("a 429/503 Retry-After holds that endpoint alone: none of its deliveries is claimed before the time, others are", async () => {
    await queued("we_throttled", 5);
    await queued("we_other", 5);
    const q = queue("worker", 1);
    const first = await drain(q);
    expect(first.map((c) => c.delivery.endpoint).sort()).toEqual(["we_other", "we_throttled"]);
    const throttled = first.find((c) => c.delivery.endpoint === "we_throttled")!;
    const other = first.find((c) => c.delivery.endpoint === "we_other")!;
    await finish(throttled, attempt({ error: "http_error", response_status: 429, retry_after: 30 }));
    await finish(other, attempt({ status: "succeeded" }));
    expect((await drain(q)).map((c) => c.delivery.endpoint)).toEqual(["we_other"]);
    // A wake-up (new work) does not end the hold either.
    await queued("we_throttled", 1);
    clock += 29_000;
    expect(await drain(q)).toHaveLength(0);
    clock += 1_001;
    expect((await drain(q)).map((c) => c.delivery.endpoint)).toEqual(["we_throttled"]);
  });

  it("a lane with nothing due waits for its next due time; one with nothing pending goes idle, out of the claim's index", async () => {
    const later = clock + 60_000;
    await queued("we_later", 1, later);
    await queued("we_done", 1);
    const q = queue("worker");
    const [done] = await drain(q);
    expect(done!.delivery.endpoint).toBe("we_done");
    await finish(done!, attempt({ status: "succeeded" }));
    expect(await drain(q)).toHaveLength(0);
    expect((await lanes().findOne({ _id: "we_later" }))!.turn_at).toBe(later);
    expect((await lanes().findOne({ _id: "we_done" }))!.turn_at).toBeNull();
    clock = later;
    expect((await drain(q)).map((c) => c.delivery.endpoint)).toEqual(["we_later"]);
  });

  it("work queued while a claim finds its lane empty is not lost: the producer's wake-up makes the idle mark miss", async () => {
    const lanesOf = new Lanes(t.db);
    await wakeLanes(t.db, [{ endpoint: "we_race", account: "acct_x", livemode: false }], clock);
    const taken = await lanesOf.take({ id: "f1", until: clock + 1_000 }, clock, 4);
    expect(taken?.took).toBe(true);
    // The claim found no delivery; meanwhile a producer queues one and wakes the lane, then the idle mark comes.
    await queued("we_race", 1);
    await lanesOf.idle(taken!.lane, "f1", null, clock);
    expect((await lanes().findOne({ _id: "we_race" }))!.turn_at).toBe(clock);
    expect(await drain(queue("worker"))).toHaveLength(1);
  });

  it("a wake-up leaves a full lane's turn where it is (at its first flight's end)", async () => {
    await queued("we_full", 6);
    await drain(queue("worker"));
    const before = (await lanes().findOne({ _id: "we_full" }))!.turn_at;
    await queued("we_full", 1);
    expect((await lanes().findOne({ _id: "we_full" }))!.turn_at).toBe(before);
  });

  it("pending deliveries without a lane (queued before lanes, or by a producer that died before its wake-up) are given a turn by the repair", async () => {
    const tenant = newTenant();
    await deliveries().insertOne({
      _id: "orphan:we_orphan",
      ...tenant,
      event: "evt_orphan",
      endpoint: "we_orphan",
      trigger: "recovery",
      status: "pending",
      due_at: clock,
      attempts: 0,
      first_failed_at: null,
      lease_owner: null,
      lease_until: null,
      epoch: 0,
      created: 1,
    });
    expect(await repairLanes(t.db, clock)).toBe(1);
    expect(await lanes().findOne({ _id: "we_orphan" })).toMatchObject({ account: tenant.account, livemode: false, turn_at: clock });
    expect(await repairLanes(t.db, clock)).toBe(0);
    // And a worker's first claim runs it.
    await lanes().deleteMany({});
    expect((await drain(queue("worker"))).map((c) => c.delivery._id)).toEqual(["orphan:we_orphan"]);
  });
});

describe("the batched claim (issue 32)", () => {
  it(
    "one claim takes every free place of the lane and up to 32 deliveries per " + "place, dealt in turn; another worker's claim then finds the lane full",
    async () => {
      await queued("we_batch", 200);
      // An endpoint that has answered before (a new lane gets one delivery per place: the next test).
      await lanes().updateOne({ _id: "we_batch" }, { $set: { answering: true } });
      const [one, two] = [queue("worker-1"), queue("worker-2")];
      const flights = await one.claimFlights();
      expect(flights).toHaveLength(4);
      expect(flights.map((f) => f.deliveries.length)).toEqual([32, 32, 32, 32]);
      const ids = flights.flatMap((f) => f.deliveries.map((d) => d._id));
      expect(new Set(ids).size).toBe(128);
      // Earliest due first, dealt round robin: the first place has the 1st, 5th, 9th...
      const byDue = [...flights.flatMap((f) => f.deliveries)].sort((a, b) => a.due_at - b.due_at);
      expect(flights[0]!.deliveries[1]!._id).toBe(byDue[4]!._id);
      expect(await inFlight("we_batch")).toBe(4);
      expect(await two.claimFlights()).toEqual([]);
      expect(await deliveries().countDocuments({ lease_owner: "worker-1", epoch: 1 })).toBe(128);
    },
  );

  it("places with no delivery for them end at once; a failing endpoint gets one place of one delivery", async () => {
    await queued("we_few", 2);
    const flights = await queue("worker").claimFlights();
    expect(flights.map((f) => f.deliveries.length)).toEqual([1, 1]);
    // The two places without a delivery are ended by a grouped write just after the claim.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await inFlight("we_few")).toBe(2);

    await queued("we_failing", 10);
    await lanes().updateOne({ _id: "we_failing" }, { $set: { failures: FAILING_AFTER } });
    const failing = await queue("worker-2").claimFlights();
    expect(failing.map((f) => f.deliveries.length)).toEqual([1]);
  });

  it("an endpoint not yet known to answer gets one delivery per place; its first success makes it a batch per place, a failure takes that back", async () => {
    await queued("we_new", 200);
    const end = (flight: string, outcome: Partial<AttemptDocument>) =>
      new Lanes(t.db).releaseFlights([{ endpoint: "we_new", flightIds: [flight], attempts: [attempt(outcome)] }], clock);

    const first = await queue("worker").claimFlights();
    expect(first.map((f) => f.deliveries.length)).toEqual([1, 1, 1, 1]);
    expect(await lanes().findOne({ _id: "we_new" })).toMatchObject({ answering: false });

    await end(first[0]!.flight.id, { status: "succeeded" });
    expect(await lanes().findOne({ _id: "we_new" })).toMatchObject({ answering: true });
    const batched = await queue("worker").claimFlights();
    expect(batched.map((f) => f.deliveries.length)).toEqual([32]);

    await end(first[1]!.flight.id, { error: "timeout" });
    expect(await lanes().findOne({ _id: "we_new" })).toMatchObject({ answering: false, failures: 1 });
    expect((await queue("worker").claimFlights()).map((f) => f.deliveries.length)).toEqual([1]);
  });

  it("two workers racing with batched claims over one lane's deliveries each get their own: no delivery is leased twice", async () => {
    for (let e = 0; e < 6; e++) await queued(`we_race${e}`, 40);
    const claimed = (await Promise.all(["w1", "w2", "w3"].map((w) => queue(w).claimFlights()))).flat();
    const ids = claimed.flatMap((f) => f.deliveries.map((d) => d._id));
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(ids.length);
    for (let e = 0; e < 6; e++) expect(await inFlight(`we_race${e}`)).toBeLessThanOrEqual(4);
  });

  it(
    "a flight's several attempts tell the lane what one at a time would have: successes end the streak, a failure after them starts one; the longest " +
      "Retry-After holds",
    async () => {
      await queued("we_told", 1);
      const lanesOf = new Lanes(t.db);
      const taken = await lanesOf.takeFlights([{ id: "f1", until: clock + 1_000 }], clock, 4);
      await lanes().updateOne({ _id: "we_told" }, { $set: { failures: 3 } });
      await lanesOf.releaseFlights(
        [
          {
            endpoint: "we_told",
            flightIds: [taken!.took[0]!.id],
            attempts: [attempt({ status: "succeeded" }), attempt({ error: "timeout" }), attempt({ error: "http_error", response_status: 503, retry_after: 7 })],
          },
        ],
        clock,
      );
      expect(await lanes().findOne({ _id: "we_told" })).toMatchObject({ failures: 2, hold_until: clock + 7_000, flights: [] });
    },
  );
});

describe("laneOutcome", () => {
  it("counts timeouts, refusals, TLS and name failures and 5xx; a success ends the streak; other failures leave it", () => {
    for (const error of ["timeout", "connection_failed", "tls_failed", "dns_failed", "invalid_response"])
      expect(laneOutcome(attempt({ error }))).toBe("failing");
    expect(laneOutcome(attempt({ error: "http_error", response_status: 500 }))).toBe("failing");
    expect(laneOutcome(attempt({ error: "http_error", response_status: 404 }))).toBe("neutral");
    for (const error of ["redirect", "blocked_address", "invalid_url", "secret_unavailable"]) expect(laneOutcome(attempt({ error }))).toBe("neutral");
    expect(laneOutcome(attempt({ status: "succeeded" }))).toBe("succeeded");
    expect(laneOutcome(null)).toBe("neutral");
  });
});
