import { traceField, type StoredTrace } from "@rms/telemetry";
import type { RequestInfo, Tenant } from "../caller.js";
import { newId } from "../ids.js";

/**
 * An event recorded with the write that caused it: pushed into the written document's
 * `pending_events` in the same single-document write (the outbox, ARCHITECTURE data rule 2 in
 * ../shared/docs/), so the change and its event commit together or not at all. Its id is made
 * before the write, so a relay that copies it to `events` twice inserts it once.
 */
export interface OutboxEvent<Type extends string = string, Snapshot = unknown, Previous = unknown> {
  _id: string;
  type: Type;
  /** Unix seconds. */
  created: number;
  account: string;
  livemode: boolean;
  /**
   * The object's version the change made (0 for its creation): grows with every committed change of
   * the same object, so a receiver can drop an event older than one it already applied.
   */
  sequence: number;
  /** The object as the change left it. */
  object: Snapshot;
  /** Old values of the changed fields only (`*.updated`), else null. */
  previous_attributes: Previous | null;
  /** Why the change was made, for an operational event that says (`webhook_endpoint.disabled`: `gone`, `failing`); else absent. */
  reason?: string;
  request: { id: string | null; idempotency_key: string | null };
  /**
   * The trace of the call that made the change (tracing on only): the worker that delivers the event continues it
   * (docs/observability.md, "Tracing"). Never part of the event's public shape.
   */
  trace?: StoredTrace;
}

/** A new event with its id, for a write about to be made. */
export function newEvent<Type extends string, Snapshot, Previous = never>(
  type: Type,
  tenant: Tenant,
  object: Snapshot,
  request: RequestInfo,
  previous: NoInfer<Previous> | null = null,
  nowMs: number = Date.now(),
): OutboxEvent<Type, Snapshot, Previous> {
  return {
    _id: newId("evt", nowMs),
    type,
    created: Math.floor(nowMs / 1000),
    account: tenant.account,
    livemode: tenant.livemode,
    sequence: 0,
    object,
    previous_attributes: previous,
    request: { id: request.requestId, idempotency_key: request.idempotencyKey },
    ...traceField(),
  };
}

/** The events stamped with the version their write makes (the versioned update knows it, the caller does not). */
export function withSequence<E>(events: readonly E[], sequence: number): E[] {
  return events.map((event) => ({ ...event, sequence }));
}

/** The update operator that appends events to a document's outbox, in the update that makes the change. */
export function pushEvents<E>(events: readonly E[]): { $push: { pending_events: { $each: E[] } } } | Record<string, never> {
  return events.length > 0 ? { $push: { pending_events: { $each: [...events] } } } : {};
}
