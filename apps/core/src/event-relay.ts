import { insertPositionedIn, type PositionCounter, type Tenanted } from "@rms/positions";
import type { Db } from "mongodb";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { OUTBOXES } from "./domains.js";
import type { PublishInTransaction } from "./storage/published-events.js";
import { EVENT_POSITIONS_COLLECTION, EVENTS_COLLECTION, eventExpiresAt, OutboxRelay, type Relayed } from "./storage/relay.js";
import { webhookFanOut, type RelayedEvent } from "./webhook-deliveries/fanout.js";
import { wakeLanes, type LaneWork } from "./webhook-deliveries/lanes.js";
import { DELIVERY_QUEUE } from "./webhook-deliveries/model.js";
import { counterIn } from "./metrics-registry.js";

/** Signals of the queue counter are at least this far apart: a copy within it of the last waits for its end. */
const SIGNAL_EVERY_MS = 20;

/**
 * The event relay every core and worker process runs: the domains' outboxes, with the webhook fan-out
 * as its `prepare` hook, so an event reaches `events` only with its deliveries already queued. `sources` are the
 * outbox collections it relays (the domains' by default; a test passes its own).
 */
export function eventRelay(db: Db, logger: Logger, metrics?: Registry, sources: readonly string[] = OUTBOXES): OutboxRelay {
  const fanOut = webhookFanOut(db);
  const counters = metrics ? relayCounters(metrics) : null;
  const signal = deliverySignal(db);
  return new OutboxRelay(db, {
    sources,
    logger,
    prepare: async (events: Relayed[]) => {
      const fannedOut = await fanOut(events as (Relayed & RelayedEvent)[]);
      const waiting = fannedOut.filter((e) => (e.pending_endpoints?.length ?? 0) > 0).length;
      if (waiting > 0) signal(waiting);
      return fannedOut;
    },
    copied: (events) => counters?.counted(events as readonly { pending_endpoints?: string[] }[]),
  });
}

/**
 * The queue counter's signal of this process (what moves it wakes idle workers): `signal(n)` adds `n` events that
 * wait for endpoints. Idle workers wake on the queue counter, moved as soon as the deliveries are queued, while the
 * events are copied: a worker's claim (a lane's turn, the lease) takes about as long as the copy, so the two overlap
 * instead of adding up (a probe of a calm stack measured 12 ms at the median from the deliveries' insert to the
 * signal when it came after the copy). A worker that reads an event before its copy lands reads it again a few ms
 * later (webhook-deliveries/queue.ts, eventCopiedSoon). At most every SIGNAL_EVERY_MS: under a write load one counter
 * update covers many documents. The first copy after a quiet spell signals at once (an idle worker's wait is the
 * event's latency); copies within SIGNAL_EVERY_MS of the last signal wait for the window's end and share one update.
 */
function deliverySignal(db: Db): (count: number) => void {
  let unsignalled = 0;
  let scheduled = false;
  let signalledAt = Number.NEGATIVE_INFINITY;
  return (count: number) => {
    unsignalled += count;
    if (scheduled) return;
    scheduled = true;
    setTimeout(
      () => {
        scheduled = false;
        signalledAt = Date.now();
        const total = unsignalled;
        unsignalled = 0;
        void DELIVERY_QUEUE.signal(db, total);
      },
      Math.max(0, signalledAt + SIGNAL_EVERY_MS - Date.now()),
    );
  };
}

/**
 * Events written with the changes that make them, in their transaction (storage/published-events.ts): the same
 * webhook fan-out the relay runs before its copy, then the insert into `events` (each with its 30 days and its
 * tenant's next stream position, as the relay's copy gives them), all with the transaction's session; after the
 * commit, the endpoints' lanes are woken and the queue counter moved, as the relay does once it has queued
 * deliveries. A bulk job's chunk publishes its events this way (docs/events.md, "Events in the same batch").
 */
export function eventPublisher(db: Db, metrics?: Registry): PublishInTransaction {
  const fanOut = webhookFanOut(db);
  const signal = deliverySignal(db);
  const positioned = { documents: db.collection<Relayed & Tenanted>(EVENTS_COLLECTION), counters: db.collection<PositionCounter>(EVENT_POSITIONS_COLLECTION) };
  const counters = metrics ? relayCounters(metrics) : null;
  return async (batch, session) => {
    const wakeAfter: LaneWork[] = [];
    const prepared = await fanOut(batch as (Relayed & RelayedEvent)[], { session, wakeAfter });
    // With their tenants' next stream positions, in commit order like the relay's copies (docs/streams.md).
    await insertPositionedIn(
      positioned,
      prepared.map((event) => ({ ...event, expires_at: eventExpiresAt(event) })),
      session,
    );
    const waiting = prepared.filter((e) => (e.pending_endpoints?.length ?? 0) > 0).length;
    return async () => {
      if (wakeAfter.length > 0) await wakeLanes(db, wakeAfter);
      if (waiting > 0) signal(waiting);
      counters?.counted(prepared);
    };
  };
}

/** The relay's counters (copied events, queued deliveries), shared by the relay and the publisher of a process. */
function relayCounters(metrics: Registry) {
  const copiedTotal = counterIn(metrics, {
    name: "relay_events_copied_total",
    help: "Events this process's relay copied into `events` (a copy repeated after a crash counts again).",
  });
  const queuedTotal = counterIn(metrics, {
    name: "webhook_deliveries_queued_total",
    help: "Deliveries queued by this process's relay (one per event and endpoint that wants it) with the events it copied.",
  });
  return {
    counted(events: readonly { pending_endpoints?: string[] }[]) {
      copiedTotal.inc(events.length);
      queuedTotal.inc(events.reduce((sum, e) => sum + (e.pending_endpoints?.length ?? 0), 0));
    },
  };
}
