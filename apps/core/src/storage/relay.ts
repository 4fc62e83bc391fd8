import { ensurePositionIndex, insertPositioned, type PositionCounter, type Tenanted } from "@rms/positions";
import { BSON, type Collection, type Db, type Document, type Filter, type UpdateFilter } from "mongodb";
import type { Logger } from "pino";
import { idTimeMs } from "../ids.js";
import type { TenantDocument } from "./documents.js";
import { ensureExpiryIndex, expiryAt, type Expiring } from "./expiry.js";
import { GroupCommit } from "./group-commit.js";

/** The collection relayed events live in, one document per event, `_id` the event id. */
export const EVENTS_COLLECTION = "events";

/**
 * Each tenant's last stream position (`@rms/positions`): the relay's copy takes the next ones in the transaction that
 * inserts the events, so a tenant's events are numbered 1, 2, 3, ... in the order their copies commit (docs/streams.md).
 */
export const EVENT_POSITIONS_COLLECTION = "event_positions";

/** The index a stream's catch-up reads: a tenant's events by position (`account, livemode, pos`). */
export const EVENT_POSITION_INDEX = "tenant_position";

/** Most bytes (BSON) of the events one copy transaction inserts: a few `job.*` events of 1 MiB stay far below the server's limits. */
const COPY_BYTES_MAX = 4 * 1024 * 1024;

/** Documents one sweep of one collection looks at, so a sweep is a bounded amount of work. */
export const SWEEP_BATCH = 100;

/** Each relay operation's time limit: a database that stops answering cannot hold the relay (or core's stop) forever. */
const OPERATION_TIMEOUT_MS = 5_000;
const LIMIT = { timeoutMS: OPERATION_TIMEOUT_MS } as const;

/**
 * Documents the fast path relays at once. Relaying one document twice at the same time is harmless (the
 * copy is by id, the pull by ids), so lanes need no coordination.
 */
export const FAST_PATH_CONCURRENCY = 4;

/** How long `stop` waits for the work in hand before leaving it to the next start's sweep. */
const STOP_GRACE_MS = 2_000;

/**
 * How long events are kept (CONTRACT.md section 7, in ../shared/docs/): each is copied with `expires_at`
 * its creation plus this, and the TTL index of `events` removes it then (ensureEventExpiryIndex).
 */
export const EVENT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;
/** Noticed documents the fast path relays together (one read, one insert, one bulk pull per collection). */
export const RELAY_BATCH = 200;

/**
 * Notices the fast path holds at most (about 100 bytes each). A writer faster than the relay (an import of a million
 * rows) would otherwise grow the queue by one entry per document written; past this, a notice is dropped and its
 * collection marked, and the relay catches up from the outbox index instead, which holds every pending event anyway.
 */
export const FAST_PATH_QUEUE_MAX = 20_000;

/** The pause before a catch-up round that failed is tried again. */
const CATCH_UP_RETRY_MS = 1_000;

/** Default time between sweeps. Normal traffic is relayed by the fast path; the sweep only finds what a crash left (and every start sweeps at once). */
export const SWEEP_INTERVAL_MS = 5_000;

/** An event as it waits in an outbox; the relay reads only these fields, a `prepare` hook may read more. */
export interface Relayed {
  _id: string;
  /** Unix seconds. */
  created?: number;
}

/**
 * The documents of a collection that hold pending events (the sweep's find, a takeover's catch-up). Every
 * pending event has an `_id`, so this is "the outbox is not empty", in a form the outbox index answers.
 */
export const HAS_PENDING_EVENTS = { "pending_events._id": { $exists: true } } as const;

/**
 * The index of an outbox collection's pending events: partial, so it holds an entry per event waiting in
 * an outbox and nothing for a relayed document; the sweep reads it instead of the collection.
 */
export async function ensureOutboxIndex<D extends Document>(collection: Collection<D>): Promise<void> {
  await collection.createIndex({ "pending_events._id": 1 }, { name: "pending_events", partialFilterExpression: HAS_PENDING_EVENTS });
}

/** The TTL index that ends an event's 30 days (each copied event carries its `expires_at`). */
export function ensureEventExpiryIndex(db: Db): Promise<void> {
  return ensureExpiryIndex(db.collection(EVENTS_COLLECTION));
}

/** The index of the events' positions (a stream's catch-up, docs/streams.md). */
export function ensureEventPositionIndex(db: Db): Promise<void> {
  return ensurePositionIndex(db.collection(EVENTS_COLLECTION), EVENT_POSITION_INDEX);
}

/** When a copied event expires: EVENT_RETENTION_MS after its creation (its `created`, else its id's time). */
export function eventExpiresAt(event: Relayed): Date {
  return expiryAt(event.created !== undefined ? event.created * 1000 : idTimeMs(event._id), EVENT_RETENTION_MS);
}

/**
 * The update that removes exactly the copied events `ids` from a document's outbox and, when that empties
 * it, copies the document's `retain_until` (if any) to `expires_at` (storage/expiry.ts), all in one
 * single-document write: a document that may expire once its events are out (a tombstone, a finished
 * job) gets its expiry only in the write that leaves nothing pending. An event pushed since the read is
 * not among `ids`, so it stays, and so does the document.
 */
export function pullRelayed(ids: readonly string[]): Document[] {
  return [
    {
      $set: { pending_events: { $filter: { input: { $ifNull: ["$pending_events", []] }, cond: { $not: [{ $in: ["$$this._id", { $literal: [...ids] }] }] } } } },
    },
    {
      $set: {
        expires_at: {
          $cond: [{ $and: [{ $eq: [{ $size: "$pending_events" }, 0] }, { $eq: [{ $type: "$retain_until" }, "date"] }] }, "$retain_until", "$expires_at"],
        },
      },
    },
  ];
}

/**
 * The pull of `ids` from one document's outbox, as read with its `retain_until`: a document that has one (a
 * tombstone, a finished job) gets the pipeline of `pullRelayed`, which starts its expiry once the outbox is
 * empty; any other gets a plain `$pull`, a third cheaper for the server, guarded by `retain_until` still being
 * absent. A write that adds one also pushes an event, so a relay follows it; should the guard miss (it was
 * added since the read), the events stay pending and that relay or the sweep pulls them.
 */
export function relayedPull(
  doc: { _id: string; retain_until?: unknown },
  ids: readonly string[],
): { filter: Filter<TenantDocument>; update: UpdateFilter<TenantDocument> | Document[] } {
  if (doc.retain_until instanceof Date) return { filter: { _id: doc._id } as Filter<TenantDocument>, update: pullRelayed(ids) };
  return {
    filter: { _id: doc._id, retain_until: { $exists: false } } as Filter<TenantDocument>,
    update: { $pull: { pending_events: { _id: { $in: [...ids] } } } } as UpdateFilter<TenantDocument>,
  };
}

/** What the relay reads of a document: its outbox and whether it has a `retain_until` (relayedPull). */
const OUTBOX_PROJECTION = { pending_events: 1, retain_until: 1 } as const;

export interface RelayOptions {
  /** The collections whose documents carry an outbox (the domains' `outboxes`). */
  sources: readonly string[];
  logger: Logger;
  /**
   * Runs on a document's pending events before they are copied and returns what to insert instead
   * (core's webhook fan-out adds deliveries and `pending_endpoints`). It must be safe to repeat: a crash
   * after it and before the pull runs it again on the same events, some perhaps already copied.
   */
  prepare?: (events: Relayed[]) => Promise<Relayed[]>;
  /** Told, without waiting, of the events (as `prepare` returned them) once they are all in `events`. */
  copied?: (events: readonly Relayed[]) => void;
  /** The most notices held (FAST_PATH_QUEUE_MAX); a test makes it small. */
  queueMax?: number;
}

/**
 * The event relay (ARCHITECTURE data rule 2, in ../shared/docs/): copies each pending event of a
 * document into `events` (inserted by its own `_id`, so a second copy is a duplicate key, not a second
 * event), then pulls exactly the copied ids from the document. An event is pulled only after its copy
 * is known to exist, so a crash at any point leaves it pending (copied again later, harmlessly), never
 * lost. Each event is copied with its `expires_at` (30 days). The write that empties an outbox also
 * starts the document's own expiry, if it has one (`pullRelayed`: tombstones, finished jobs).
 *
 * Fast path: the write path calls `notify` with the document it just wrote (no waiting in the request).
 * Slow path: `sweep` finds documents with pending events that a crash left, in bounded batches.
 */
export class OutboxRelay {
  private readonly events: Collection<Relayed & Tenanted & Expiring>;
  private readonly positions: Collection<PositionCounter>;
  /** One copy transaction at a time per relay: its lanes' events go together, so they never conflict on a tenant's counter. */
  private readonly copies: GroupCommit<readonly Relayed[], void>;
  private readonly queued = new Set<string>();
  /** Collections with notices dropped at the cap, and how many: caught up from the outbox index (catchUp). */
  private readonly overflowed = new Map<string, number>();
  private readonly queueMax: number;
  private draining: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly options: RelayOptions,
  ) {
    this.events = db.collection<Relayed & Tenanted & Expiring>(EVENTS_COLLECTION);
    this.positions = db.collection<PositionCounter>(EVENT_POSITIONS_COLLECTION);
    this.queueMax = options.queueMax ?? FAST_PATH_QUEUE_MAX;
    this.copies = new GroupCommit({
      concurrency: 1,
      maxBatch: FAST_PATH_CONCURRENCY * 2,
      flush: async (items) => {
        for (const chunk of byBytes(items.flat(), COPY_BYTES_MAX)) await this.copyPositioned(chunk);
        return items.map(() => undefined);
      },
    });
  }

  /** Tells the relay a document was just written; returns at once, the relay works in the background. */
  notify(collection: string, id: string): void {
    if (this.stopped) return;
    if (this.queued.size < this.queueMax) this.queued.add(`${collection}\u0000${id}`);
    else this.overflowed.set(collection, (this.overflowed.get(collection) ?? 0) + 1);
    this.draining ??= this.drain().finally(() => {
      this.draining = null;
    });
  }

  /** The notices held now: at most `queueMax`, however far writers run ahead. */
  get backlog(): number {
    return this.queued.size;
  }

  /** Resolves once every notified document has been relayed (for an orderly stop). */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** The notices in hand, then (when some were dropped at the cap) a catch-up from the outbox index, until neither is left. */
  private async drain(): Promise<void> {
    while (!this.stopped && (this.queued.size > 0 || this.overflowed.size > 0)) {
      await this.drainQueued();
      const [collection] = this.overflowed.keys();
      if (collection !== undefined && !this.stopped) await this.catchUp(collection);
    }
  }

  /**
   * One round of catch-up for a collection whose notices were dropped: the documents with pending events, read
   * from the outbox index as the sweep reads them, relayed by FAST_PATH_CONCURRENCY batches at once. The mark goes
   * only when a round finds nothing and no notice was dropped since it began (a document the read missed because
   * it was not yet written has its notice counted after).
   */
  private async catchUp(collectionName: string): Promise<void> {
    const dropped = this.overflowed.get(collectionName);
    const pending = await pendingDocuments(this.db.collection<TenantDocument>(collectionName), RELAY_BATCH * FAST_PATH_CONCURRENCY).catch((error: unknown) => {
      this.options.logger.warn({ err: error, collection: collectionName }, "relay catch-up read failed");
      return null;
    });
    // The mark stays; the next round (or the sweep) reads again, after a pause rather than at once.
    if (pending === null) return pause(CATCH_UP_RETRY_MS);
    if (pending.length === 0) {
      if (this.overflowed.get(collectionName) === dropped) this.overflowed.delete(collectionName);
      return;
    }
    const ids = pending.map(({ _id }) => _id);
    const batches = Array.from({ length: Math.ceil(ids.length / RELAY_BATCH) }, (_, i) => ids.slice(i * RELAY_BATCH, (i + 1) * RELAY_BATCH));
    const failed = await Promise.all(
      batches.map((batch) =>
        this.relayDocuments(collectionName, batch).then(
          () => false,
          (error: unknown) => {
            this.options.logger.warn({ err: error, collection: collectionName, count: batch.length }, "relay of documents failed");
            return true;
          },
        ),
      ),
    );
    if (failed.includes(true)) await pause(CATCH_UP_RETRY_MS);
  }

  /**
   * FAST_PATH_CONCURRENCY lanes, each relaying a batch of documents at a time: each batch is a few sequential round
   * trips, and writes come faster than that.
   */
  private async drainQueued(): Promise<void> {
    const lane = async () => {
      while (this.queued.size > 0 && !this.stopped) {
        // Up to RELAY_BATCH noticed documents of one collection at a time: a job's chunk of hundreds of
        // written resources costs a few round trips, not three per document.
        let collection: string | undefined;
        const ids: string[] = [];
        for (const entry of this.queued) {
          const [name, id] = entry.split("\u0000") as [string, string];
          collection ??= name;
          if (name !== collection) continue;
          this.queued.delete(entry);
          ids.push(id);
          if (ids.length >= RELAY_BATCH) break;
        }
        try {
          await this.relayDocuments(collection!, ids);
        } catch (error) {
          // Left pending: the sweep retries them.
          this.options.logger.warn({ err: error, collection, count: ids.length }, "relay of documents failed");
        }
      }
    };
    await Promise.all(Array.from({ length: FAST_PATH_CONCURRENCY }, lane));
  }

  /**
   * Relays several documents of one collection as `relayDocument` does one: one read of their outboxes,
   * `prepare` over all their events, one insert of them, then per document a pull of exactly the ids
   * copied (one unordered bulk write). Returns the events moved.
   */
  async relayDocuments(collectionName: string, ids: readonly string[]): Promise<number> {
    if (ids.length === 1) return this.relayDocument(collectionName, ids[0]!);
    const collection = this.db.collection<TenantDocument>(collectionName);
    const docs = await collection.find({ _id: { $in: [...ids] } } as Filter<TenantDocument>, { projection: OUTBOX_PROJECTION, ...LIMIT }).toArray();
    const withEvents = docs.filter((doc) => (doc.pending_events ?? []).length > 0);
    const events = withEvents.flatMap((doc) => doc.pending_events as Relayed[]);
    if (events.length > 0) {
      const prepared = this.options.prepare ? await this.options.prepare(events) : events;
      await this.copy(prepared);
      this.options.copied?.(prepared);
      // Only ids whose copy exists now are pulled; an event pushed since the read is not among them.
      await collection.bulkWrite(
        withEvents.map((doc) => ({
          updateOne: relayedPull(
            doc,
            (doc.pending_events as Relayed[]).map((event) => event._id),
          ),
        })),
        { ordered: false, ...LIMIT },
      );
    }
    return events.length;
  }

  /** Relays one document's pending events. Returns the events moved. */
  async relayDocument(collectionName: string, id: string): Promise<number> {
    const collection = this.db.collection<TenantDocument>(collectionName);
    const doc = await collection.findOne({ _id: id } as Filter<TenantDocument>, { projection: OUTBOX_PROJECTION, ...LIMIT });
    if (!doc) return 0;
    const pending = (doc.pending_events ?? []) as Relayed[];
    if (pending.length > 0) {
      const prepared = this.options.prepare ? await this.options.prepare(pending) : pending;
      await this.copy(prepared);
      this.options.copied?.(prepared);
      const ids = pending.map((event) => event._id);
      // Only ids whose copy exists now are pulled; an event pushed since the read is not among them.
      const pull = relayedPull(doc, ids);
      await collection.updateOne(pull.filter, pull.update, LIMIT);
    }
    return pending.length;
  }

  /**
   * Inserts each event by its id with its `expires_at` and its tenant's next position, in one transaction with the
   * tenants' counters (`@rms/positions`); an event already there (an earlier run copied it) keeps its place. The
   * relay's lanes hand their events to one copier, which runs one transaction at a time with all that waits.
   */
  private copy(events: readonly Relayed[]): Promise<void> {
    return this.copies.add(events);
  }

  private async copyPositioned(events: readonly Relayed[]): Promise<void> {
    const documents = events.map((event) => ({ ...(event as Relayed & Tenanted), expires_at: eventExpiresAt(event) }));
    await insertPositioned({ documents: this.events, counters: this.positions }, documents, LIMIT);
  }

  /**
   * One pass over every source: documents with pending events (from the outbox index, ensureOutboxIndex), up to SWEEP_BATCH per collection. Returns
   * the events moved. (Nothing else is left to sweep: tombstones and finished jobs expire by their TTL
   * index once the relay has emptied their outbox, and events by theirs.)
   */
  async sweep(): Promise<{ events: number }> {
    let events = 0;
    for (const name of this.options.sources) {
      const collection = this.db.collection<TenantDocument>(name);
      const stuck = await pendingDocuments(collection, SWEEP_BATCH);
      if (stuck.length > 0)
        events += await this.relayDocuments(
          name,
          stuck.map(({ _id }) => _id),
        );
    }
    return { events };
  }

  /** Sweeps now, then every `intervalMs` until `stop` (one sweep at a time; a failed sweep is logged and retried next time). */
  start(intervalMs: number = SWEEP_INTERVAL_MS): void {
    let running = false;
    const pass = () => {
      if (running) return;
      running = true;
      this.sweep()
        .catch((error: unknown) => this.options.logger.warn({ err: error }, "relay sweep failed"))
        .finally(() => {
          running = false;
        });
    };
    // At once: a restarted core relays what its crash left without waiting for the first interval.
    pass();
    this.timer = setInterval(pass, intervalMs);
    this.timer.unref();
  }

  /**
   * Stops sweeping and taking notices; waits a little for the document in hand. Whatever is left stays
   * pending in its document, where any relay's sweep finds it.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([this.idle(), new Promise<void>((resolve) => (grace = setTimeout(resolve, STOP_GRACE_MS)))]);
    clearTimeout(grace);
  }
}

/** Up to `limit` documents with pending events, from the outbox index (the sweep's and the catch-up's one read). */
function pendingDocuments(collection: Collection<TenantDocument>, limit: number): Promise<{ _id: string }[]> {
  return collection
    .find(HAS_PENDING_EVENTS as Filter<TenantDocument>, { projection: { _id: 1 }, ...LIMIT })
    .limit(limit)
    .toArray();
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The events in runs of at most `maxBytes` (BSON), in order; an event larger than that is a run alone. */
function byBytes(events: readonly Relayed[], maxBytes: number): Relayed[][] {
  const runs: Relayed[][] = [];
  let bytes = 0;
  for (const event of events) {
    const size = BSON.calculateObjectSize(event as Document);
    const run = runs.at(-1);
    if (run && bytes + size <= maxBytes) {
      run.push(event);
      bytes += size;
    } else {
      runs.push([event]);
      bytes = size;
    }
  }
  return runs;
}
