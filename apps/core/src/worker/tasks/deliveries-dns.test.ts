import { eventually } from "@rms/test-db/testkit";
import { pino } from "pino";
import { Registry } from "prom-client";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newId } from "../../ids.js";
import { DEFAULT_SETTINGS } from "../../settings.js";
import { newEvent } from "../../storage/outbox.js";
import { EVENTS_COLLECTION } from "../../storage/relay.js";
import { startDnsServer, type TestDnsServer } from "../../testutil/dns-server.js";
import { newTenant, thingsCollection } from "../../testutil/storage.js";
import { startReceiver, type Receiver } from "../../testutil/webhook-receiver.js";
import { insertEndpoint, testKeyring } from "../../testutil/webhooks.js";
import { webhookFanOut, type RelayedEvent } from "../../webhook-deliveries/fanout.js";
import { WEBHOOK_ATTEMPTS_COLLECTION, type AttemptDocument, type FannedOutEvent } from "../../webhook-deliveries/model.js";
import { NAME_LOOKUP_TIMEOUT_MS, nameLookup } from "../../webhooks/name-lookup.js";
import { parseRetrySchedule } from "../../webhooks/schedule.js";
import { deliveriesPoller } from "./deliveries.js";

/**
 * Test (f) of issue 20 (CONTRACT.md section 7, name lookups): endpoints whose name's DNS never answers (the
 * resolver points at a local UDP socket that swallows every query) fail their attempts within the lookup's
 * time limit, while another account's delivery, queued just after them, arrives without waiting for them.
 */

let t: Awaited<ReturnType<typeof thingsCollection>>;
let blackHole: TestDnsServer;
let target: Receiver;
const receivedAt: number[] = [];
const keyring = testKeyring();

beforeAll(async () => {
  t = await thingsCollection();
  blackHole = await startDnsServer({ silent: true });
  target = await startReceiver({
    handler: (_request, response) => {
      receivedAt.push(Date.now());
      response.end("ok");
    },
  });
});
afterAll(async () => {
  await target?.close();
  await blackHole?.close();
  await t?.close();
});

async function relayedEvent(tenant: ReturnType<typeof newTenant>): Promise<FannedOutEvent> {
  const event = newEvent("resource.created", tenant, { id: newId("res"), name: "dns" }, { requestId: null, idempotencyKey: null });
  const [prepared] = await webhookFanOut(t.db)([event as typeof event & RelayedEvent]);
  await t.db.collection<FannedOutEvent>(EVENTS_COLLECTION).insertOne(prepared as FannedOutEvent);
  return prepared as FannedOutEvent;
}

it("a name whose DNS never answers fails its attempt (dns_failed) within the lookup's limit, and another account's delivery arrives meanwhile", {
  timeout: 60_000,
}, async () => {
  const stuck = newTenant();
  const other = newTenant();
  // More endpoints than the 4 threads of the process's pool, all named at the silent DNS server.
  const names = Array.from({ length: 6 }, (_, i) => `hooks-${i}.never.test`);
  for (const name of names) await insertEndpoint(t.db, keyring, stuck, { url: `http://${name}:${target.port}/hook` });
  await insertEndpoint(t.db, keyring, other, { url: target.url("/other") });
  const worker = deliveriesPoller(
    {
      db: t.db,
      logger: pino({ level: "silent" }),
      workerId: "dns-test",
      written: () => {},
      metrics: new Registry(),
      settings: { ...DEFAULT_SETTINGS, secretKeyring: keyring, webhookAllowPrivate: true, webhookRetrySchedule: parseRetrySchedule("1h") },
    },
    { pollMs: 50, transport: { resolve: nameLookup({ servers: [blackHole.address], hostsFile: null }) } },
  );
  worker.start();
  try {
    const stuckEvent = await relayedEvent(stuck);
    // The stuck attempts are under way (their lookups asked) before the other account's event is queued.
    await eventually(async () => expect(blackHole.queries).toBeGreaterThanOrEqual(names.length));
    const queuedAt = Date.now();
    await relayedEvent(other);
    await eventually(async () => expect(receivedAt).toHaveLength(1));
    const otherLagMs = receivedAt[0]! - queuedAt;

    const attempts = t.db.collection<AttemptDocument>(WEBHOOK_ATTEMPTS_COLLECTION);
    const failed = await eventually(
      async () => {
        const found = await attempts.find({ event: stuckEvent._id }).toArray();
        expect(found).toHaveLength(names.length);
        return found;
      },
      { timeoutMs: 30_000 },
    );
    const durations = failed.map((a) => a.duration_ms);
    console.log(
      `test (f): ${names.length} attempts to names whose DNS never answers failed after ${Math.min(...durations)}-${Math.max(...durations)} ms (lookup ` +
        `limit ${NAME_LOOKUP_TIMEOUT_MS} ms); the other account's delivery, queued while they waited, arrived ${otherLagMs} ms after it was queued`,
    );
    expect(failed.map((a) => a.error)).toEqual(names.map(() => "dns_failed"));
    // Within the lookup's limit (with a margin for a loaded machine), well before the 15 s attempt timeout.
    for (const ms of durations) expect(ms).toBeLessThan(NAME_LOOKUP_TIMEOUT_MS + 3_000);
    // Not delayed by them: queued after they started, it took less time than any of them, so it arrived while
    // they were all still waiting on their lookups.
    expect(otherLagMs).toBeLessThan(Math.min(...durations));
    expect(target.deliveries.map((d) => d.url)).toEqual(["/other"]);
  } finally {
    await worker.stop();
  }
});
