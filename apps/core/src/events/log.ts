import { clusterTimeNow, clusterTimeOf, readCausally, STREAM_READ_CONCERN, tenantKey, type PositionCounter } from "@rms/positions";
import { MongoServerError, type ChangeStream, type ChangeStreamInsertDocument, type Collection, type Db, type Document, type ResumeToken } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { errors } from "../errors.js";
import { boundedPage } from "../storage/bounded-page.js";
import { EVENT_POSITION_INDEX, EVENT_POSITIONS_COLLECTION, EVENTS_COLLECTION } from "../storage/relay.js";
import type { StoredEvent } from "./model.js";

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

/** One message of a watch: events in commit order, the token to resume after it, the commit time it covers. */
export interface WatchMessage {
  readonly events: PositionedEvent[];
  readonly resumeToken: ResumeToken | null;
  /** BSON timestamp as 64 bits; 0n when unchanged. */
  readonly clusterTime: bigint;
}

/** How often a quiet watch sends its latest resume token (a heartbeat). */
export const WATCH_HEARTBEAT_MS = 10_000;
/** How long one wait for a change lasts on the server (the watch looks at its caller between waits). */
const WATCH_AWAIT_MS = 1_000;
/** Codes of a change stream that cannot resume from the token given: its history has left the oplog, or the token is bad. */
const TOKEN_LOST = new Set([260, 280, 286]);

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
      const { items, hasMore } = await boundedPage(cursor, limit, (event) => JSON.stringify(event.object).length);
      const last = items.at(-1)?.pos ?? after;
      // A page cut short says so; one read to the end covers everything up to the head (positions the TTL index
      // already removed are simply not there).
      const through = hasMore ? last : Math.max(last, head, after);
      const passing = filterIsEmpty(filter) ? items : items.filter((event) => matches(filter, event.type, objectIdOf(event)));
      return { events: passing, through, head };
    });
  }

  /**
   * Every positioned event copied from now on (or after `resumeToken`), of every tenant, in commit order, as messages:
   * first the start (no events; the token and the time it starts at), then the events as the change stream gives
   * them, and a heartbeat with the latest token every WATCH_HEARTBEAT_MS while quiet. Ends when `signal` aborts.
   * A token whose history is gone is `resume_token_lost`: the caller starts afresh and catches up by position.
   */
  async *watch(resumeToken: ResumeToken | null, signal: { readonly aborted: boolean }): AsyncGenerator<WatchMessage> {
    const start = resumeToken ? null : await clusterTimeNow(this.db.client);
    // A change stream reads at majority whatever the client's read concern (core's is `local`).
    const majority = this.db.collection<PositionedEvent>(EVENTS_COLLECTION, { readConcern: STREAM_READ_CONCERN });
    const stream: ChangeStream<PositionedEvent, ChangeStreamInsertDocument<PositionedEvent>> = majority.watch(
      [{ $match: { operationType: "insert", "fullDocument.pos": { $exists: true } } }],
      { ...(resumeToken ? { resumeAfter: resumeToken } : { startAtOperationTime: start! }), maxAwaitTimeMS: WATCH_AWAIT_MS },
    );
    try {
      // The first wait opens the stream on the server, so the start message carries a token it can resume from. The
      // server refusing to open it from the token given (malformed, or its history gone) makes that token useless.
      let change = await nextChange(stream).catch((error: unknown) => {
        if (resumeToken && error instanceof MongoServerError) throw tokenLost();
        throw error;
      });
      yield { events: [], resumeToken: stream.resumeToken ?? resumeToken, clusterTime: start ? clusterTimeOf(start) : 0n };
      let beat = Date.now();
      while (!signal.aborted) {
        if (change) {
          yield { events: [change.fullDocument], resumeToken: change._id, clusterTime: clusterTimeOf(change.clusterTime) };
          beat = Date.now();
        } else if (Date.now() - beat >= WATCH_HEARTBEAT_MS) {
          yield { events: [], resumeToken: stream.resumeToken, clusterTime: 0n };
          beat = Date.now();
        }
        change = await nextChange(stream);
      }
    } finally {
      await stream.close().catch(() => undefined);
    }
  }
}

function filterIsEmpty(filter: StreamFilter): boolean {
  return filter.object === "" && filter.exact.size === 0 && filter.prefixes.length === 0;
}

/** The next change, or null after one wait with none; a lost history is `resume_token_lost`. */
async function nextChange<C extends Document>(stream: ChangeStream<PositionedEvent, C>): Promise<C | null> {
  try {
    return await stream.tryNext();
  } catch (error) {
    if (error instanceof MongoServerError && TOKEN_LOST.has(error.code as number)) throw tokenLost();
    throw error;
  }
}

const tokenLost = () => errors.of("resume_token_lost", "The database cannot resume a watch from this token (its history is gone): start a new watch.");
