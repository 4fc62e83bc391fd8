import { randomBytes } from "node:crypto";
import { eventually } from "@rms/test-db/testkit";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newId } from "../../ids.js";
import { newEvent } from "../../storage/outbox.js";
import { EVENTS_COLLECTION } from "../../storage/relay.js";
import { startWorkerProcess } from "../../testutil/process.js";
import { startReceiver, type Receiver } from "../../testutil/webhook-receiver.js";
import { insertEndpoint } from "../../testutil/webhooks.js";
import { webhookFanOut, type RelayedEvent } from "../../webhook-deliveries/fanout.js";
import type { FannedOutEvent } from "../../webhook-deliveries/model.js";
import { masterKey } from "../../webhooks/secret.js";
import { useTestDatabase } from "../../testutil/database.js";

const { db, databaseName } = useTestDatabase("worker-process");
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

it("a worker process runs the delivery task with the settings of its environment (RMS_SECRET_KEY, WEBHOOK_ALLOW_PRIVATE)", async () => {
  const keyBytes = randomBytes(32);
  const tenant = { account: newId("acct"), livemode: false };
  const endpoint = await insertEndpoint(db, { primary: masterKey(keyBytes) }, tenant, { url: receiver.url() });
  const event = newEvent("resource.created", tenant, { id: newId("res"), name: "p" }, { requestId: null, idempotencyKey: null });
  const [prepared] = await webhookFanOut(db)([event as typeof event & RelayedEvent]);
  await db.collection<FannedOutEvent>(EVENTS_COLLECTION).insertOne(prepared as FannedOutEvent);

  const worker = await startWorkerProcess(databaseName, { RMS_SECRET_KEY: keyBytes.toString("hex"), WEBHOOK_ALLOW_PRIVATE: "true" });
  try {
    const delivery = await eventually(async () => {
      expect(receiver.deliveries).toHaveLength(1);
      return receiver.deliveries[0]!;
    });
    expect((new Webhook(endpoint.secrets[0]!).verify(delivery.body, delivery.headers as Record<string, string>) as { id: string }).id).toBe(event._id);
    await eventually(async () => expect((await db.collection<FannedOutEvent>(EVENTS_COLLECTION).findOne({ _id: event._id }))!.pending_endpoints).toEqual([]));
  } finally {
    expect(await worker.stop()).toBe(0);
  }
});
