import type { OutboxEvent } from "../storage/outbox.js";

/**
 * An event as the relay stored it in `events` (storage/relay.ts): the outbox entry unchanged, its
 * `object` the snapshot the change's domain recorded (metadata still as `{k, v}` pairs).
 */
export type StoredEvent = OutboxEvent<string, Record<string, unknown>, Record<string, unknown>> & {
  /** Endpoints that have not answered this event with a 2xx yet (webhook-deliveries/fanout.ts fills it, a success pulls one). */
  pending_endpoints?: string[];
  /**
   * Present (true) exactly while `pending_endpoints` is not empty: set by the fan-out, removed by the update
   * that pulls the last endpoint (webhook-deliveries/pending.ts). The indexed form of `delivery_success`.
   */
  undelivered?: true;
};

/** Every event type the service records (the domains' vocabularies in @rms/proto): the set a `type` prefix covers. */
export { EVENT_TYPES } from "@rms/proto";

/** Longest `type` filter accepted; real types are far shorter. */
export const TYPE_FILTER_MAX_LENGTH = 100;
/** Most exact types one `types[]` filter may name (CONTRACT.md section 7). */
export const TYPES_FILTER_MAX = 20;

/** Bounds on a number: `created` (Unix seconds), `sequence`. */
export interface Bounds {
  gt?: number;
  gte?: number;
  lt?: number;
  lte?: number;
}

/** Bounds on `created`, Unix seconds. */
export type CreatedBounds = Bounds;

/**
 * One object's events (`object=res_...`), by `sequence` within the given bounds: the gap repair of CONTRACT.md
 * section 7. The snapshot every event records carries the object's id (`object.id`), which the index reads.
 */
export interface ObjectFilter {
  id: string;
  sequence: Bounds;
}

/** How a list narrows the tenant's events: one exact type, a type prefix (`resource.*`), or a set of exact types. */
export type TypeFilter = { exact: string } | { prefix: string } | { anyOf: string[] };

/**
 * About the bytes an event's answer carries (its object and, for an update, the old values: both as JSON), for the
 * pages that stop at 2 MiB (storage/bounded-page.ts): an update of large metadata carries both.
 */
export function eventBytes(event: StoredEvent): number {
  return JSON.stringify(event.object).length + (event.previous_attributes ? JSON.stringify(event.previous_attributes).length : 0);
}
