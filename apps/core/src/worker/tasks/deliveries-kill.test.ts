import { randomBytes } from "node:crypto";
import { eventually } from "@rms/test-db/testkit";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newId } from "../../ids.js";
import { newEvent } from "../../storage/outbox.js";
import { EVENTS_COLLECTION } from "../../storage/relay.js";
import { startWorkerProcess } from "../../testutil/process.js";
import { startReceiver, type Receiver } from "../../testutil/webhook-receiver.js";
import { insertEndpoint } from "../../testutil/webhooks.js";
import { webhookFanOut, type RelayedEvent } from "../../webhook-deliveries/fanout.js";
import { WEBHOOK_LANES_COLLECTION } from "../../webhook-deliveries/lanes.js";
import {
  WEBHOOK_ATTEMPTS_COLLECTION,
  WEBHOOK_DELIVERIES_COLLECTION,
  type AttemptDocument,
  type DeliveryDocument,
  type FannedOutEvent,
} from "../../webhook-deliveries/model.js";
import { masterKey } from "../../webhooks/secret.js";
import { useTestDatabase } from "../../testutil/database.js";

const { db, databaseName } = useTestDatabase("worker-kill");
let receiver: Receiver;
/** Events queued for the one endpoint: many flights' worth of batches. */
const EVENTS = 300;
/** The receiver kills the first worker as this delivery arrives, before answering it: a POST of a batch in the air. */
const KILL_AT = 60;
let kill: (() => void) | null = null;

beforeAll(async () => {
  receiver = await startReceiver({
    handler: (_request, response) => {
      if (receiver.deliveries.length === KILL_AT && kill) {
        kill();
        kill = null;
        return;
      }
      response.end("ok");
    },
  });
});
afterAll(async () => {
  await receiver?.close();
});

it("a worker SIGKILLed in the middle of a batch loses none of it: each delivery it held was recorded or is sent again, with the same webhook-id", async () => {
  const keyBytes = randomBytes(32);
  const tenant = { account: newId("acct"), livemode: false };
  await insertEndpoint(db, { primary: masterKey(keyBytes) }, tenant, { url: receiver.url() });
  const queued = Array.from(
    { length: EVENTS },
    (_, n) =>
      newEvent("resource.created", tenant, { id: newId("res"), name: `k${n}` }, { requestId: null, idempotencyKey: null }) as ReturnType<typeof newEvent> &
        RelayedEvent,
  );
  const prepared = await webhookFanOut(db)(queued);
  await db.collection<FannedOutEvent>(EVENTS_COLLECTION).insertMany(prepared as FannedOutEvent[]);
  const env = { RMS_SECRET_KEY: keyBytes.toString("hex"), WEBHOOK_ALLOW_PRIVATE: "true" };
  const deliveries = db.collection<DeliveryDocument>(WEBHOOK_DELIVERIES_COLLECTION);
  const attempts = db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION);

  const first = await startWorkerProcess(databaseName, env);
  const killed = new Promise<void>((resolve) => {
    kill = () => {
      first.child.kill("SIGKILL");
      resolve();
    };
  });
  await killed;
  await first.kill();
  // The kill is a signal: a POST of the same flight may still reach the receiver (answered, unrecorded) before the
  // process is gone, so what was sent before is everything received until the first worker is dead.
  const sentBefore = receiver.deliveries.map((d) => d.headers["webhook-id"] as string);
  expect(sentBefore.length).toBeGreaterThanOrEqual(KILL_AT);

  // What the dead worker held: its leased deliveries, as the next claim will find them.
  const held = await deliveries.find({ lease_owner: first.workerId }).toArray();
  const recorded = new Set((await attempts.find({}, { projection: { event: 1 } }).toArray()).map((a) => a.event));
  // The delivery whose POST the kill cut off is among them, sent and unrecorded; others of its batch were
  // answered and not yet recorded, or recorded and not yet released, or not yet sent.
  const cutOff = sentBefore[KILL_AT - 1]!;
  expect(held.map((d) => d.event)).toContain(cutOff);
  expect(recorded.has(cutOff)).toBe(false);
  const sentUnrecorded = held.filter((d) => sentBefore.includes(d.event) && !recorded.has(d.event));
  expect(sentUnrecorded.length).toBeGreaterThanOrEqual(1);

  // Sixty seconds on (the lease and the flights' margin) in one step: the dead worker's leases and lane places end now.
  const nowMs = Date.now();
  await deliveries.updateMany({ lease_owner: first.workerId }, { $set: { lease_until: nowMs - 1 } });
  await db.collection(WEBHOOK_LANES_COLLECTION).updateMany({}, { $set: { flights: [], turn_at: nowMs } });

  const second = await startWorkerProcess(databaseName, env);
  try {
    await eventually(
      async () => {
        expect(await deliveries.countDocuments({ status: "pending" })).toBe(0);
        expect(await db.collection<FannedOutEvent>(EVENTS_COLLECTION).countDocuments({ "pending_endpoints.0": { $exists: true } })).toBe(0);
      },
      { timeoutMs: 60_000 },
    );
  } finally {
    expect(await second.stop()).toBe(0);
  }

  const sentAfter = receiver.deliveries.slice(sentBefore.length).map((d) => d.headers["webhook-id"] as string);
  const received = new Set([...sentBefore, ...sentAfter]);
  // Every event reached the receiver; every delivery the dead worker held was recorded by it or sent again.
  for (const event of prepared) expect(received.has(event._id)).toBe(true);
  for (const delivery of held) expect(recorded.has(delivery.event) || sentAfter.includes(delivery.event)).toBe(true);
  // Sent twice only where the kill cut a record off: the cut-off one at least, never one already recorded.
  const twice = sentBefore.filter((id) => sentAfter.includes(id));
  expect(twice).toContain(cutOff);
  for (const id of twice) expect(recorded.has(id)).toBe(false);
  // Each event's success is listed exactly once: an attempt cut off is made again under the same attempt id.
  const listed = await attempts.find({ status: "succeeded" }, { projection: { event: 1 } }).toArray();
  expect(listed).toHaveLength(EVENTS);
  expect(new Set(listed.map((a) => a.event)).size).toBe(EVENTS);
}, 120_000);
