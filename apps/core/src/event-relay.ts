import type { Db } from "mongodb";
import type { Logger } from "pino";
import { OUTBOXES } from "./domains.js";
import { OutboxRelay, type Relayed } from "./storage/relay.js";
import { webhookFanOut, type RelayedEvent } from "./webhooks/fanout.js";
import { signalQueued } from "./webhooks/queue-signal.js";

/**
 * The event relay every core and worker process runs: the domains' outboxes, with the webhook fan-out
 * as its `prepare` hook, so an event reaches `events` only with its deliveries already queued.
 */
export function eventRelay(db: Db, logger: Logger): OutboxRelay {
  const fanOut = webhookFanOut(db);
  return new OutboxRelay(db, {
    sources: OUTBOXES,
    logger,
    prepare: (events: Relayed[]) => fanOut(events as (Relayed & RelayedEvent)[]),
    // Idle workers wake on the queue counter; moved once the events are copied, so a woken worker finds them.
    copied: (events) => {
      const waiting = (events as readonly { pending_endpoints?: string[] }[]).filter((e) => (e.pending_endpoints?.length ?? 0) > 0).length;
      if (waiting > 0) void signalQueued(db, waiting);
    },
  });
}
