import { readCausally, ResumeTokenLost, STREAM_READ_CONCERN, tenantKey, watchPositioned, type PositionCounter, type WatchMessage } from "@rms/positions";
import type { Collection, Db, ResumeToken } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { errors } from "../errors.js";
import { boundedPage } from "../storage/bounded-page.js";
import { EVENT_POSITION_INDEX, EVENT_POSITIONS_COLLECTION, EVENTS_COLLECTION } from "../storage/relay.js";
import { eventBytes, type StoredEvent } from "./model.js";

/** An event as the relay copied it since streams exist: with its tenant's position. */
export type PositionedEvent = StoredEvent & { pos: number };

/** Positions one catch-up read examines by default, and at most. */
export const LOG_READ_DEFAULT = 100;
export const LOG_READ_MAX = 500;

/** Which of a tenant's events a stream wants: exact types and type prefixes, and one object. */
export interface StreamFilter {
  readonly exact: ReadonlySet<string>;
  readonly prefixes: readonly string[];
  readonly object: string;
}

/** True when `event` passes the filter (no types: every type; no object: every object). */
export function matches(filter: StreamFilter, type: string, objectId: string): boolean {
  if (filter.object !== "" && objectId !== filter.object) return false;
  if (filter.exact.size === 0 && filter.prefixes.length === 0) return true;
  return filter.exact.has(type) || filter.prefixes.some((prefix) => type.startsWith(prefix));
}

/** The id of the object an event is about (its snapshot's `id`). */
export function objectIdOf(event: StoredEvent): string {
  const id = (event.object as { id?: unknown } | null)?.id;
  return typeof id === "string" ? id : "";
}

/** Where a read starts: after a position, after an event (its position looked up), or nowhere (only the head). */
export type LogStart = { position: number } | { event: string } | null;

export interface LogRead {
  readonly events: PositionedEvent[];
  /** Every position up to this one was examined. */
  readonly through: number;
  /** The tenant's last position when read. */
  readonly head: number;
}

/**
 * A tenant's events in stream order (docs/streams.md): by `pos`, the position the relay's copy gave each in its
 * transaction, so positions follow the order the copies committed, not the ids' times. The catch-up reads of a
 * stream and the one change stream a gateway's feed is backed by (`watch`).
 */
export class EventLog {
  private readonly events: Collection<PositionedEvent>;
  private readonly counters: Collection<PositionCounter>;

  constructor(private readonly db: Db) {
    this.events = db.collection<PositionedEvent>(EVENTS_COLLECTION);
    this.counters = db.collection<PositionCounter>(EVENT_POSITIONS_COLLECTION);
  }

  /**
   * Up to `limit` positions of the tenant after `start`, those that pass `filter`, read at majority after
   * `afterClusterTime` (a watch's events up to it are all visible), with the tenant's head read first in the same
   * causal session: every position up to the head is visible to the page's read.
   */
  async read(tenant: Tenant, start: LogStart, limit: number, filter: StreamFilter, afterClusterTime: bigint, budget: Budget = UNBOUNDED): Promise<LogRead> {
    return readCausally(this.db.client, afterClusterTime, async (session) => {
      const options = { session, readConcern: STREAM_READ_CONCERN, ...budget.db() };
      const counter = await this.counters.findOne({ _id: tenantKey(tenant) }, options);
      const head = counter?.pos ?? 0;
      if (start === null) return { events: [], through: head, head };
      let after: number;
      if ("event" in start) {
        const at = await this.events.findOne({ _id: start.event }, { ...options, projection: { account: 1, livemode: 1, pos: 1 } });
        if (!at || at.account !== tenant.account || at.livemode !== tenant.livemode) {
          throw errors.invalid(
            "parameter_invalid",
            `Invalid starting_after: ${start.event.slice(0, 64)} is no event of this account and mode (or it has expired).`,
            "starting_after",
          );
        }
        // An event copied before positions existed comes before every positioned one.
        after = at.pos ?? 0;
      } else after = start.position;
      const cursor = this.events.find(
        { account: tenant.account, livemode: tenant.livemode, pos: { $gt: after } },
        { ...options, sort: { pos: 1 }, hint: EVENT_POSITION_INDEX, limit: limit + 1, batchSize: Math.min(limit + 1, 101) },
      );
      const { items, hasMore } = await boundedPage(cursor, limit, eventBytes);
      const last = items.at(-1)?.pos ?? after;
      // A page cut short says so; one read to the end covers everything up to the head (positions the TTL index
      // already removed are simply not there).
      const through = hasMore ? last : Math.max(last, head, after);
      const passing = filterIsEmpty(filter) ? items : items.filter((event) => matches(filter, event.type, objectIdOf(event)));
      return { events: passing, through, head };
    });
  }

  /**
   * Every positioned event copied from now on (or after `resumeToken`), of every tenant, in commit order
   * (`watchPositioned`): the start, the events, heartbeats. A token whose history is gone is `resume_token_lost`:
   * the gateway starts afresh and its streams catch up by position.
   */
  async *watch(resumeToken: ResumeToken | null, signal: { readonly aborted: boolean }): AsyncGenerator<WatchMessage<PositionedEvent>> {
    try {
      yield* watchPositioned(this.events, resumeToken, signal);
    } catch (error) {
      if (error instanceof ResumeTokenLost) throw errors.of("resume_token_lost", error.message);
      throw error;
    }
  }
}

function filterIsEmpty(filter: StreamFilter): boolean {
  return filter.object === "" && filter.exact.size === 0 && filter.prefixes.length === 0;
}
