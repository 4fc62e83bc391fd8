import type { Db } from "mongodb";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { OUTBOXES } from "./domains.js";
import { OutboxRelay, type Relayed } from "./storage/relay.js";
import { webhookFanOut, type RelayedEvent } from "./webhook-deliveries/fanout.js";
import { DELIVERY_QUEUE } from "./webhook-deliveries/model.js";
import { counterIn } from "./metrics-registry.js";

/** Signals of the queue counter are at least this far apart: a copy within it of the last waits for its end. */
const SIGNAL_EVERY_MS = 20;

/**
 * The event relay every core and worker process runs: the domains' outboxes, with the webhook fan-out
 * as its `prepare` hook, so an event reaches `events` only with its deliveries already queued.
 */
export function eventRelay(db: Db, logger: Logger, metrics?: Registry): OutboxRelay {
  const fanOut = webhookFanOut(db);
  const copiedTotal = metrics
    ? counterIn(metrics, { name: "relay_events_copied_total", help: "Events this process's relay copied into `events` (a copy repeated after a crash counts again)." })
    : null;
  const queuedTotal = metrics
    ? counterIn(metrics, {
        name: "webhook_deliveries_queued_total",
        help: "Deliveries queued by this process's relay (one per event and endpoint that wants it) with the events it copied.",
      })
    : null;
  // Idle workers wake on the queue counter, moved once the events are copied (so a woken worker finds
  // them), at most every SIGNAL_EVERY_MS: under a write load one counter update covers many documents.
  // The first copy after a quiet spell signals at once (an idle worker's wait is the event's latency); copies
  // within SIGNAL_EVERY_MS of the last signal wait for the window's end and share one update.
  let unsignalled = 0;
  let scheduled = false;
  let signalledAt = Number.NEGATIVE_INFINITY;
  const signal = (count: number) => {
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
  return new OutboxRelay(db, {
    sources: OUTBOXES,
    logger,
    prepare: (events: Relayed[]) => fanOut(events as (Relayed & RelayedEvent)[]),
    copied: (events) => {
      const fannedOut = events as readonly { pending_endpoints?: string[] }[];
      const waiting = fannedOut.filter((e) => (e.pending_endpoints?.length ?? 0) > 0).length;
      if (waiting > 0) signal(waiting);
      copiedTotal?.inc(events.length);
      queuedTotal?.inc(fannedOut.reduce((sum, e) => sum + (e.pending_endpoints?.length ?? 0), 0));
    },
  });
}
