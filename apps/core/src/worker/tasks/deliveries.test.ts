import { eventually } from "@rms/test-db/testkit";
import { pino } from "pino";
import { Webhook } from "standardwebhooks";
import { Registry } from "prom-client";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { failPointClient } from "../../testutil/fail-points.js";
import type { Tenant } from "../../caller.js";
import { EventStore } from "../../events/store.js";
import { newId } from "../../ids.js";
import { DEFAULT_SETTINGS } from "../../settings.js";
import { newEvent } from "../../storage/outbox.js";
import { EVENTS_COLLECTION } from "../../storage/relay.js";
import { newTenant, thingsCollection } from "../../testutil/storage.js";
import { fastTtlMonitor, TTL_TEST_TIMEOUT_MS, TTL_WAIT_MS } from "../../testutil/ttl.js";
import { startReceiver, testCertificate, type Receiver, type ReceiverHandler, type ReceivedDelivery } from "../../testutil/webhook-receiver.js";
import { insertEndpoint, testKeyring, type TestEndpoint } from "../../testutil/webhooks.js";
import type { WorkerContext } from "./task.js";
import { performAttempt, recordAttempt } from "../../webhook-deliveries/attempt.js";
import { webhookFanOut, type RelayedEvent } from "../../webhook-deliveries/fanout.js";
import {
  attemptIdOf,
  recoveryDelivery,
  scheduledDeliveryId,
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  WEBHOOK_ENDPOINTS_COLLECTION,
  type AttemptDocument,
  type DeliveryDocument,
  type DeliveryEndpoint,
  type FannedOutEvent,
} from "../../webhook-deliveries/model.js";
import type { Resolver } from "../../webhooks/pinned-lookup.js";
import { parseRetrySchedule } from "../../webhooks/schedule.js";
import { wakeLanes, WEBHOOK_LANES_COLLECTION, type LaneDocument } from "../../webhook-deliveries/lanes.js";
import { DeliveryQueue, ensureDeliveryIndexes, type ClaimedFlight } from "../../webhook-deliveries/queue.js";
import { DELIVERY_QUEUE } from "../../webhook-deliveries/model.js";
import { deliveriesPoller, type DeliveryTaskOptions } from "./deliveries.js";
import type { QueuePoller } from "./poller.js";

let t: Awaited<ReturnType<typeof thingsCollection>>;
let tlsCa: string;
let certificate: { cert: string; key: string };
const keyring = testKeyring();
const logger = pino({ level: "silent" });
const open: Array<{ close(): Promise<void> }> = [];
const running: QueuePoller<ClaimedFlight>[] = [];

beforeAll(async () => {
  t = await thingsCollection();
  certificate = await testCertificate({ ip: ["127.0.0.1"], dns: ["localhost"] });
  tlsCa = certificate.cert;
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((w) => w.stop()));
  await Promise.all(open.splice(0).map((r) => r.close()));
});
afterAll(() => t?.close());

const deliveries = () => t.db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
const attempts = () => t.db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION);
const events = () => t.db.collection<FannedOutEvent>(EVENTS_COLLECTION);
const lanes = () => t.db.collection<LaneDocument>(WEBHOOK_LANES_COLLECTION);
const verify = (secret: string, delivery: ReceivedDelivery) =>
  new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as { id: string };

async function receiver(options: { handler?: ReceiverHandler; tls?: boolean } = {}): Promise<Receiver> {
  const started = await startReceiver({ ...(options.handler ? { handler: options.handler } : {}), ...(options.tls ? { tls: certificate } : {}) });
  open.push(started);
  return started;
}

function context(overrides: Partial<WorkerContext["settings"]> = {}, workerId = newId("wa")): WorkerContext {
  return {
    db: t.db,
    logger,
    workerId,
    written: () => {},
    metrics: new Registry(),
    settings: {
      ...DEFAULT_SETTINGS,
      secretKeyring: keyring,
      webhookAllowPrivate: true,
      webhookRetrySchedule: parseRetrySchedule("100ms,200ms,300ms"),
      ...overrides,
    },
  };
}

/** A running worker over the test database (polling every 50 ms). */
function worker(options: DeliveryTaskOptions & { settings?: Partial<WorkerContext["settings"]>; workerId?: string } = {}): QueuePoller<ClaimedFlight> {
  const started = deliveriesPoller(context(options.settings, options.workerId), { transport: { ca: tlsCa }, pollMs: 50, ...options });
  started.start();
  running.push(started);
  return started;
}

/** An event the relay has fanned out (its deliveries queued) and not yet copied into `events`. */
async function fannedOutEvent(tenant: Tenant): Promise<FannedOutEvent> {
  const event = newEvent("resource.created", tenant, { id: newId("res"), name: "w" }, { requestId: null, idempotencyKey: null });
  const [prepared] = await webhookFanOut(t.db)([event as typeof event & RelayedEvent]);
  return prepared as FannedOutEvent;
}

/** An event relayed as the relay does it: fanned out (deliveries queued), then copied into `events`. */
async function relayedEvent(tenant: Tenant): Promise<FannedOutEvent> {
  const prepared = await fannedOutEvent(tenant);
  await events().insertOne(prepared);
  return prepared;
}

/** A tenant with one endpoint at a fresh receiver, and an event fanned out to it but not copied yet. */
async function endpointAndUncopiedEvent() {
  const tenant = newTenant();
  const target = await receiver();
  const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: target.url() });
  return { target, endpoint, prepared: await fannedOutEvent(tenant) };
}

/** Deliveries queued as every producer queues them (fan-out, recover): inserted, then their endpoints' lanes woken. */
async function queued(...docs: DeliveryDocument[]): Promise<void> {
  await deliveries().insertMany(docs);
  await wakeLanes(t.db, docs);
}

const deliveryOf = (event: FannedOutEvent, endpoint: TestEndpoint) => deliveries().findOne({ _id: scheduledDeliveryId(event._id, endpoint.doc._id) });
const attemptsOf = (event: FannedOutEvent) => attempts().find({ event: event._id }).sort({ _id: 1 }).toArray();

/** The delivery once it is no longer pending: "succeeded" once it left the queue (a success deletes it), else the failed document. */
async function finished(event: FannedOutEvent, endpoint: TestEndpoint): Promise<DeliveryDocument | "succeeded"> {
  return eventually(async () => {
    const delivery = await deliveryOf(event, endpoint);
    expect(delivery?.status).not.toBe("pending");
    return delivery ?? "succeeded";
  });
}

describe("the deliveries worker", () => {
  it("delivers to HTTP and HTTPS receivers, every delivery verified with the library; the event no longer waits for either", async () => {
    const tenant = newTenant();
    const plain = await receiver();
    const secure = await receiver({ tls: true });
    const one = await insertEndpoint(t.db, keyring, tenant, { url: plain.url() });
    const two = await insertEndpoint(t.db, keyring, tenant, { url: secure.url("/in", "localhost") });
    const event = await relayedEvent(tenant);
    expect(event.pending_endpoints).toHaveLength(2);
    worker();

    for (const endpoint of [one, two]) expect(await finished(event, endpoint)).toBe("succeeded");
    expect(verify(one.secrets[0]!, plain.deliveries[0]!).id).toBe(event._id);
    expect(verify(two.secrets[0]!, secure.deliveries[0]!).id).toBe(event._id);
    expect((await events().findOne({ _id: event._id }))!.pending_endpoints).toEqual([]);
    // The last endpoint's success removed the flag the events list's delivery_success reads, in the same update.
    expect(await events().findOne({ _id: event._id })).not.toHaveProperty("undelivered");
    const recorded = await attemptsOf(event);
    expect(recorded.map((a) => [a.status, a.trigger, a.response_status])).toEqual([
      ["succeeded", "scheduled", 200],
      ["succeeded", "scheduled", 200],
    ]);
  });

  it("retries on the compressed schedule until a 2xx; each attempt recorded once, each delivery verifies with the same webhook-id", async () => {
    const tenant = newTenant();
    let calls = 0;
    const flaky = await receiver({ handler: (_q, response) => (++calls <= 2 ? response.writeHead(500).end("down") : response.end("ok")) });
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: flaky.url() });
    const event = await relayedEvent(tenant);
    worker();

    expect(await finished(event, endpoint)).toBe("succeeded");
    expect((await attemptsOf(event)).map((a) => [a.status, a.response_status, a.error])).toEqual([
      ["failed", 500, "http_error"],
      ["failed", 500, "http_error"],
      ["succeeded", 200, null],
    ]);
    expect(flaky.deliveries.map((d) => verify(endpoint.secrets[0]!, d).id)).toEqual([event._id, event._id, event._id]);
  });

  it("gives up after the last delay of the schedule: failed, the event still waiting for that endpoint", async () => {
    const tenant = newTenant();
    const down = await receiver({ handler: (_q, response) => response.writeHead(500).end() });
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: down.url() });
    const event = await relayedEvent(tenant);
    worker({ settings: { webhookRetrySchedule: parseRetrySchedule("50ms,50ms") } });
    expect(await finished(event, endpoint)).toMatchObject({ status: "failed", attempts: 3, ended_reason: "schedule_exhausted" });
    expect(await attemptsOf(event)).toHaveLength(3);
    expect((await events().findOne({ _id: event._id }))!.pending_endpoints).toEqual([endpoint.doc._id]);
  });

  it("a 3xx is a failure (`redirect`) and is not followed, even to a blocked address", async () => {
    const tenant = newTenant();
    const mover = await receiver({ handler: (_q, response) => response.writeHead(302, { location: "http://169.254.169.254/latest/meta-data" }).end() });
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: mover.url() });
    const event = await relayedEvent(tenant);
    worker({ settings: { webhookRetrySchedule: parseRetrySchedule("50ms") } });
    expect(await finished(event, endpoint)).toMatchObject({ status: "failed", attempts: 2 });
    expect((await attemptsOf(event)).map((a) => [a.error, a.response_status])).toEqual([
      ["redirect", 302],
      ["redirect", 302],
    ]);
  });

  it("a 410 disables the endpoint at once; its other deliveries then end without an attempt", async () => {
    const tenant = newTenant();
    const gone = await receiver({ handler: (_q, response) => response.writeHead(410).end() });
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: gone.url() });
    const first = await relayedEvent(tenant);
    worker();
    expect(await finished(first, endpoint)).toMatchObject({ status: "failed", attempts: 1, ended_reason: "endpoint_disabled" });
    expect(await t.db.collection<DeliveryEndpoint>(WEBHOOK_ENDPOINTS_COLLECTION).findOne({ _id: endpoint.doc._id })).toMatchObject({
      status: "disabled",
      disabled_reason: "gone",
    });
    // Queued before the disable took effect (a fan-out reads endpoints before the worker disables one).
    const second = await relayedEvent(tenant);
    await queued({
      ...(await deliveryOf(first, endpoint))!,
      _id: scheduledDeliveryId(second._id, endpoint.doc._id),
      event: second._id,
      status: "pending",
      attempts: 0,
      lease_owner: null,
      lease_until: null,
    });
    expect(await finished(second, endpoint)).toMatchObject({ status: "failed", attempts: 0, ended_reason: "endpoint_disabled" });
    expect(gone.deliveries).toHaveLength(1);
  });

  for (const status of [429, 503]) {
    it(`after a ${status} with Retry-After the next attempt waits at least that long, not the schedule's 100 ms`, async () => {
      const tenant = newTenant();
      const received: number[] = [];
      let calls = 0;
      const busy = await receiver({
        handler: (_q, response) => {
          received.push(Date.now());
          if (++calls === 1) response.writeHead(status, { "retry-after": "1" }).end();
          else response.end("ok");
        },
      });
      const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: busy.url() });
      const event = await relayedEvent(tenant);
      worker();
      expect(await finished(event, endpoint)).toBe("succeeded");
      expect(await attemptsOf(event)).toHaveLength(2);
      expect(received[1]! - received[0]!).toBeGreaterThanOrEqual(1000);
      expect((await attemptsOf(event))[0]).toMatchObject({ response_status: status, retry_after: 1 });
    });
  }

  it("a receiver that never answers is a timeout; a closed port is connection_failed", async () => {
    const tenant = newTenant();
    const silent = await receiver({ handler: () => {} });
    const closed = await startReceiver();
    const closedUrl = closed.url();
    await closed.close();
    const slow = await insertEndpoint(t.db, keyring, tenant, { url: silent.url() });
    const refused = await insertEndpoint(t.db, keyring, tenant, { url: closedUrl });
    const event = await relayedEvent(tenant);
    worker({ transport: { timeoutMs: 300 }, settings: { webhookRetrySchedule: parseRetrySchedule("50ms") } });
    await finished(event, slow);
    await finished(event, refused);
    const byEndpoint = (id: string) => attempts().find({ endpoint: id }).toArray();
    expect((await byEndpoint(slow.doc._id)).map((a) => a.error)).toEqual(["timeout", "timeout"]);
    expect((await byEndpoint(refused.doc._id)).map((a) => a.error)).toEqual(["connection_failed", "connection_failed"]);
  });

  it("SSRF at delivery: a name that resolves to a blocked address fails with blocked_address, and nothing is sent", async () => {
    const tenant = newTenant();
    const target = await receiver();
    const resolve: Resolver = async (host) => (host === "hooks.example.test" ? [{ address: "127.0.0.1", family: 4 }] : []);
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: `https://hooks.example.test:${target.port}/in` });
    const event = await relayedEvent(tenant);
    worker({ transport: { resolve }, settings: { webhookAllowPrivate: false, webhookRetrySchedule: parseRetrySchedule("50ms") } });
    expect(await finished(event, endpoint)).toMatchObject({ status: "failed", attempts: 2 });
    expect((await attemptsOf(event)).map((a) => a.error)).toEqual(["blocked_address", "blocked_address"]);
    expect(target.connections).toBe(0);
  });

  it("two workers racing over 30 events: each delivery is attempted exactly once", async () => {
    const tenant = newTenant();
    const target = await receiver();
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: target.url() });
    const queued = await Promise.all(Array.from({ length: 30 }, () => relayedEvent(tenant)));
    worker({ workerId: "racer-1" });
    worker({ workerId: "racer-2" });
    await eventually(async () => expect(await deliveries().countDocuments({ endpoint: endpoint.doc._id })).toBe(0));
    const ids = target.deliveries.map((d) => verify(endpoint.secrets[0]!, d).id).sort();
    expect(ids).toEqual(queued.map((e) => e._id).sort());
    expect(await attempts().countDocuments({ endpoint: endpoint.doc._id })).toBe(30);
  });

  it("a disabled endpoint's delivery ends failed without an attempt; a deleted endpoint's too, and the event stops waiting for it", async () => {
    const tenant = newTenant();
    const target = await receiver();
    const off = await insertEndpoint(t.db, keyring, tenant, { url: target.url() });
    const removed = await insertEndpoint(t.db, keyring, tenant, { url: target.url() });
    const event = await relayedEvent(tenant);
    await t.db.collection<DeliveryEndpoint>(WEBHOOK_ENDPOINTS_COLLECTION).updateOne({ _id: off.doc._id }, { $set: { status: "disabled" } });
    await t.db.collection<DeliveryEndpoint>(WEBHOOK_ENDPOINTS_COLLECTION).deleteOne({ _id: removed.doc._id });
    worker();
    expect(await finished(event, off)).toMatchObject({ status: "failed", attempts: 0, ended_reason: "endpoint_disabled" });
    expect(await finished(event, removed)).toMatchObject({ status: "failed", attempts: 0, ended_reason: "endpoint_deleted" });
    expect(target.deliveries).toHaveLength(0);
    expect((await events().findOne({ _id: event._id }))!.pending_endpoints).toEqual([off.doc._id]);
  });

  it("a deleted endpoint's backlog ends in batches: one flight ends a hundred deliveries that were claimed one at a time while it never answered", async () => {
    const tenant = newTenant();
    const target = await receiver();
    const removed = await insertEndpoint(t.db, keyring, tenant, { url: target.url() });
    const queuedEvents = [];
    for (let i = 0; i < 100; i++) queuedEvents.push(await relayedEvent(tenant));
    await t.db.collection<DeliveryEndpoint>(WEBHOOK_ENDPOINTS_COLLECTION).deleteOne({ _id: removed.doc._id });
    // A clock that stands still: however slow the machine, the flight is young throughout (FLIGHT_CONTINUE_MS).
    const frozen = Date.now();
    const queue = new DeliveryQueue({ db: t.db, logger, owner: "ending", settings: context().settings, metrics: new Registry(), now: () => frozen });
    const [flight] = await queue.claimFlights(1);
    expect(flight!.deliveries).toHaveLength(1);
    const processed = await queue.processFlight(flight!);
    queue.close();
    expect(processed).toHaveLength(100);
    expect(new Set(processed.map((p) => p.step))).toEqual(new Set(["failed"]));
    expect(await deliveries().countDocuments({ endpoint: removed.doc._id, status: "failed", ended_reason: "endpoint_deleted" })).toBe(100);
    expect(await events().countDocuments({ _id: { $in: queuedEvents.map((e) => e._id) }, pending_endpoints: removed.doc._id })).toBe(0);
    expect(target.deliveries).toHaveLength(0);
  });

  it("after a crash between recording an attempt and applying it, the next claim applies it without sending again", async () => {
    const tenant = newTenant();
    const target = await receiver();
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: target.url() });
    const event = await relayedEvent(tenant);
    const queued = (await deliveryOf(event, endpoint))!;
    // A worker claimed it, made and recorded the attempt, then died holding the lease.
    const env = { db: t.db, keyring, allowPrivate: true };
    const attemptId = attemptIdOf(queued, 1);
    await recordAttempt(t.db, await performAttempt(env, { event, endpoint: endpoint.doc, trigger: "scheduled", delivery: queued._id, attemptId }));
    await deliveries().updateOne({ _id: queued._id }, { $set: { lease_owner: "dead-worker", lease_until: Date.now() - 1, epoch: 1 } });
    expect(target.deliveries).toHaveLength(1);

    worker();
    expect(await finished(event, endpoint)).toBe("succeeded");
    expect(target.deliveries).toHaveLength(1);
    expect(await attempts().countDocuments({ event: event._id })).toBe(1);
    expect((await events().findOne({ _id: event._id }))!.pending_endpoints).toEqual([]);
  });

  it("a delivery whose event is not copied yet waits for it, then delivers", async () => {
    const { target, endpoint, prepared } = await endpointAndUncopiedEvent();
    const event = prepared;
    worker();
    // Claimed and put back, more than once, without an attempt.
    await eventually(async () =>
      expect(await deliveries().findOne({ event: event._id })).toMatchObject({
        status: "pending",
        attempts: 0,
        epoch: expect.toSatisfy((n: number) => n >= 2),
      }),
    );
    expect(target.deliveries).toHaveLength(0);
    await events().insertOne(prepared);
    expect(await finished(prepared, endpoint)).toBe("succeeded");
    expect(await attemptsOf(prepared)).toHaveLength(1);
  });

  it("a delivery claimed just before its event is copied reads the event again and is delivered on that claim, not put back", async () => {
    const { target, endpoint, prepared } = await endpointAndUncopiedEvent();
    const { settings } = context();
    const queue = new DeliveryQueue({ db: t.db, logger, owner: newId("wa"), settings, metrics: new Registry(), transport: { ca: tlsCa } });
    const claimed = (await queue.claim())!;
    expect(claimed.delivery.event).toBe(prepared._id);
    // The relay's copy lands a few ms into the attempt, as when a worker's claim comes between the relay's two writes.
    const copy = new Promise((resolve) => setTimeout(resolve, 5)).then(() => events().insertOne(prepared));
    const processed = await queue.process(claimed);
    await copy;
    expect(processed.step).toBe("succeeded");
    expect(target.deliveries).toHaveLength(1);
    expect(await deliveryOf(prepared, endpoint)).toBeNull();
  });

  it("an idle worker is woken by the queue counter's change stream: a new event is delivered long before its next counter read", async () => {
    const tenant = newTenant();
    const target = await receiver();
    await insertEndpoint(t.db, keyring, tenant, { url: target.url() });
    // Counter reads a minute apart: only the change stream can wake it sooner.
    worker({ pollMs: 60_000 });
    // Its first look (at start) finds nothing; the next is a minute away.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const started = Date.now();
    await relayedEvent(tenant);
    await DELIVERY_QUEUE.signal(t.db);
    await eventually(() => expect(target.deliveries).toHaveLength(1), { timeoutMs: 30_000 });
    const tookMs = Date.now() - started;
    process.stderr.write(`delivered ${tookMs} ms after its signal, with counter reads 60,000 ms apart\n`);
    expect(tookMs).toBeLessThan(30_000);
  });

  it("a recovery delivery is one attempt with trigger `recovery`, not retried; a later one that succeeds ends the event's wait", async () => {
    const tenant = newTenant();
    let up = false;
    const target = await receiver({ handler: (_q, response) => (up ? response.end("ok") : response.writeHead(500).end()) });
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: target.url() });
    const event = await relayedEvent(tenant);
    worker({ settings: { webhookRetrySchedule: parseRetrySchedule("50ms") } });
    expect(await finished(event, endpoint)).toMatchObject({ status: "failed", attempts: 2 });

    const first = recoveryDelivery(event, endpoint.doc._id);
    await queued(first);
    const failedAgain = await eventually(async () => {
      const found = await deliveries().findOne({ _id: first._id });
      expect(found?.status).toBe("failed");
      return found!;
    });
    expect(failedAgain).toMatchObject({ attempts: 1, trigger: "recovery", ended_reason: "schedule_exhausted" });

    up = true;
    const second = recoveryDelivery(event, endpoint.doc._id);
    await queued(second);
    // Kept as succeeded (a scheduled delivery that succeeds is deleted): recover reads these.
    await eventually(async () => expect(await deliveries().findOne({ _id: second._id })).toMatchObject({ status: "succeeded", attempts: 1 }));
    expect((await attemptsOf(event)).map((a) => [a.trigger, a.status])).toEqual([
      ["scheduled", "failed"],
      ["scheduled", "failed"],
      ["recovery", "failed"],
      ["recovery", "succeeded"],
    ]);
    expect((await events().findOne({ _id: event._id }))!.pending_endpoints).toEqual([]);
  });

  it(
    "a flight of an endpoint that answers goes on with what is queued while it " + "sends, over one connection, holding its one place; never past its time",
    async () => {
      const tenant = newTenant();
      // The real time, moved on by the test at one point.
      let ahead = 0;
      let queuing: Promise<unknown> | null = null;
      const flightsSeen: number[] = [];
      const target = await receiver({
        handler: (_request, response) => {
          const n = target.deliveries.length;
          // While the first delivery is in the air, ten more events are queued for the endpoint.
          if (n === 1) queuing = Promise.all(Array.from({ length: 10 }, () => relayedEvent(tenant)));
          void (async () => {
            await queuing;
            flightsSeen.push((await lanes().findOne({ _id: endpoint.doc._id }))!.flights.length);
            // At the eleventh, three more are queued and the clock passes the flight's time: the flight sends its
            // twelfth (claimed already) and claims nothing more, so those three wait for another flight.
            if (n === 11) {
              await Promise.all(Array.from({ length: 3 }, () => relayedEvent(tenant)));
              ahead = continueMs;
            }
            response.end("ok");
          })();
        },
      });
      const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: target.url() });
      for (let i = 0; i < 2; i++) await relayedEvent(tenant);
      await lanes().updateOne({ _id: endpoint.doc._id }, { $set: { answering: true } });
      // A flight's time long enough for a slow machine, passed by moving the clock on.
      const continueMs = 30_000;
      const queue = new DeliveryQueue({
        db: t.db,
        logger,
        owner: "continuing",
        settings: context().settings,
        metrics: new Registry(),
        now: () => Date.now() + ahead,
        continueMs,
      });
      const [flight, ...others] = await queue.claimFlights(1);
      expect(others).toEqual([]);
      expect(flight!.deliveries).toHaveLength(2);

      const processed = await queue.processFlight(flight!);
      queue.close();
      expect(processed.map((p) => p.step)).toEqual(Array(12).fill("succeeded"));
      expect(target.deliveries).toHaveLength(12);
      expect(target.connections).toBe(1);
      // One place of the lane, held from the first delivery to the last, and given back at the flight's end.
      expect(new Set(flightsSeen)).toEqual(new Set([1]));
      const lane = await lanes().findOne({ _id: endpoint.doc._id });
      expect(lane!.flights).toEqual([]);
      // The three queued past the flight's time were not claimed by it: pending, unleased.
      const left = await deliveries().find({ endpoint: endpoint.doc._id }).toArray();
      expect(left.map((d) => ({ status: d.status, lease_owner: d.lease_owner ?? null }))).toEqual(Array(3).fill({ status: "pending", lease_owner: null }));
    },
  );

  // What a worker killed, or a primary away, makes a flight send twice is what it sent and had not recorded: a fail
  // point holds this queue's first record (its client's appName) while the flight goes on.
  it("a flight sends at most `unrecordedMax` deliveries ahead of their records; once the records commit, it delivers the rest, each once", async () => {
    const faults = await failPointClient("unrecorded");
    open.push(faults);
    const tenant = newTenant();
    const target = await receiver();
    const endpoint = await insertEndpoint(t.db, keyring, tenant, { url: target.url() });
    for (let i = 0; i < 12; i++) await relayedEvent(tenant);
    await lanes().updateOne({ _id: endpoint.doc._id }, { $set: { answering: true } });
    const queue = new DeliveryQueue({
      db: faults.client.db(t.db.databaseName),
      logger,
      owner: "bounded",
      settings: context().settings,
      metrics: new Registry(),
      unrecordedMax: 4,
    });
    // Other tests' lanes may have work too (left leased here): this endpoint's turn comes within a few claims.
    let flight: ClaimedFlight | undefined;
    for (let claims = 0; claims < 10 && !flight; claims++) flight = (await queue.claimFlights(1)).find((f) => f.deliveries[0]!.endpoint === endpoint.doc._id);
    expect(flight!.deliveries).toHaveLength(12);
    const heldMs = 5_000;
    if (!(await faults.arm({ times: 1 }, { failCommands: ["insert"], blockConnection: true, blockTimeMS: heldMs }))) {
      queue.close();
      return;
    }
    const started = Date.now();
    const processing = queue.processFlight(flight!);
    await eventually(() => expect(target.deliveries.length).toBeGreaterThanOrEqual(4));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const whileHeld = target.deliveries.length;
    const heldFor = Date.now() - started;
    const processed = await processing;
    queue.close();
    console.log(`sent while the first record was held: ${whileHeld} (checked ${heldFor} ms into a hold of ${heldMs} ms)`);
    // Checked while the hold lasted, or the count proves nothing.
    expect(heldFor).toBeLessThan(heldMs);
    expect(whileHeld).toBe(4);
    expect(processed.map((p) => p.step)).toEqual(Array(12).fill("succeeded"));
    expect(target.deliveries).toHaveLength(12);
    expect(new Set(target.deliveries.map((d) => d.headers["webhook-id"])).size).toBe(12);
  });

  it("pending_webhooks and the delivery_success filter follow the deliveries", async () => {
    const tenant = newTenant();
    const target = await receiver();
    const down = await receiver({ handler: (_q, response) => response.writeHead(500).end() });
    const good = await insertEndpoint(t.db, keyring, tenant, { url: target.url() });
    const event = await relayedEvent(tenant);
    const store = new EventStore(t.db);
    const page = { limit: 10, created: {} };
    expect((await store.list(tenant, { ...page, deliverySuccess: false })).items.map((e) => e._id)).toEqual([event._id]);
    expect((await store.list(tenant, { ...page, deliverySuccess: true })).items).toHaveLength(0);

    worker({ settings: { webhookRetrySchedule: parseRetrySchedule("50ms") } });
    await finished(event, good);
    expect((await store.list(tenant, { ...page, deliverySuccess: true })).items.map((e) => e._id)).toEqual([event._id]);
    expect((await store.list(tenant, { ...page, deliverySuccess: false })).items).toHaveLength(0);

    const failing = await insertEndpoint(t.db, keyring, tenant, { url: down.url() });
    const second = await relayedEvent(tenant);
    await finished(second, failing);
    expect((await store.get(tenant, second._id))!.pending_endpoints).toEqual([failing.doc._id]);
    expect((await store.list(tenant, { ...page, deliverySuccess: false })).items.map((e) => e._id)).toEqual([second._id]);
    expect((await store.list(tenant, page)).items).toHaveLength(2);
  });
});

it("keeps attempts and finished deliveries 30 days (TTL index): older ones go, a pending delivery and younger ones stay", {
  timeout: TTL_TEST_TIMEOUT_MS,
}, async () => {
  await fastTtlMonitor(t.db);
  await ensureDeliveryIndexes(t.db);
  const tenant = newTenant();
  const nowS = Math.floor(Date.now() / 1000);
  const old = nowS - 31 * 86_400;
  const young = nowS - 29 * 86_400;
  const attempt = (id: string, created: number): AttemptDocument => ({
    _id: id,
    ...tenant,
    event: "evt_retention",
    endpoint: "we_retention",
    status: "failed",
    response_status: 500,
    response_body: "",
    error: "http_error",
    duration_ms: 1,
    trigger: "scheduled",
    created,
    delivery: null,
    disable_endpoint: false,
    retry_after: null,
  });
  const delivery = (id: string, created: number, dueAt: number): DeliveryDocument => ({
    _id: id,
    ...tenant,
    event: "evt_retention",
    endpoint: "we_retention",
    trigger: "scheduled",
    status: "pending",
    due_at: dueAt,
    attempts: 1,
    first_failed_at: null,
    lease_owner: null,
    lease_until: null,
    epoch: 0,
    created,
  });
  // Recorded as delivery records them: each with its expiry, 30 days after it was made.
  for (const a of [attempt("wa_retention_old", old), attempt("wa_retention_young", young)]) {
    expect((await recordAttempt(t.db, a)).expires_at).toEqual(new Date((a.created + 30 * 86_400) * 1000));
  }
  // Two due deliveries to an endpoint that no longer exists, which the worker ends as failed (so they get
  // their expiry), and one pending for a day. Inserted with no lane: the worker's first claim gives their
  // endpoint a turn (lanes.ts, repairLanes).
  await deliveries().insertMany([
    delivery("retention-failed-old", old, Date.now()),
    delivery("retention-failed-young", young, Date.now()),
    delivery("retention-pending-old", old, Date.now() + 86_400_000),
  ]);
  worker();
  await eventually(async () =>
    expect(await deliveries().findOne({ _id: "retention-failed-young" })).toMatchObject({
      status: "failed",
      expires_at: new Date((young + 30 * 86_400) * 1000),
    }),
  );
  await eventually(async () => expect(await attempts().countDocuments({ _id: "wa_retention_old" })).toBe(0), { timeoutMs: TTL_WAIT_MS });
  await eventually(async () => expect(await deliveries().countDocuments({ _id: "retention-failed-old" })).toBe(0), { timeoutMs: TTL_WAIT_MS });
  expect(await attempts().countDocuments({ _id: "wa_retention_young" })).toBe(1);
  const pending = await deliveries().findOne({ _id: "retention-pending-old" });
  expect(pending).toMatchObject({ status: "pending" });
  expect(pending!.expires_at).toBeUndefined();
  expect(await deliveries().countDocuments({ _id: "retention-failed-young" })).toBe(1);
});
