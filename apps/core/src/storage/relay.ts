import { IDEMPOTENCY_RETENTION_MS, isDuplicateKeyError } from "@rms/proto";
import { MongoBulkWriteError, type Collection, type Db, type Document, type Filter } from "mongodb";
import type { Logger } from "pino";
import { idTimeMs } from "../ids.js";
import type { TenantDocument } from "./documents.js";

/** The collection relayed events live in, one document per event, `_id` the event id. */
export const EVENTS_COLLECTION = "events";

/** Documents (and tombstones) one sweep of one collection looks at, so a sweep is a bounded amount of work. */
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

/** How long events are kept (CONTRACT.md section 7, in ../shared/docs/); older ones go by one deleteMany. */
export const EVENT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;
/**
 * How often a sweep also deletes expired events. Retention is measured in days, and the delete reads the
 * whole collection on an engine without secondary indexes, so once per sweep (every few seconds) would be
 * work for nothing.
 */
export const RETENTION_PASS_INTERVAL_MS = 10 * 60 * 1000;
/** Noticed documents the fast path relays together (one read, one insert, one bulk pull per collection). */
export const RELAY_BATCH = 200;

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
 * an outbox and nothing for a relayed document; the sweep reads it instead of the collection. And the
 * tombstones' (partial on `deleted: true`), in id order: the sweep's removal of the oldest ones.
 */
export async function ensureOutboxIndex<D extends Document>(collection: Collection<D>): Promise<void> {
  await collection.createIndex({ "pending_events._id": 1 }, { name: "pending_events", partialFilterExpression: HAS_PENDING_EVENTS });
  await collection.createIndex({ deleted: 1, _id: 1 }, { name: "tombstones", partialFilterExpression: { deleted: true } });
}

export interface RelayOptions {
  /** The collections whose documents carry an outbox (the domains' `outboxes`). */
  sources: readonly string[];
  logger: Logger;
  /** The clock tombstone removal is judged by (tests move it). */
  now?: () => number;
  /**
   * Runs on a document's pending events before they are copied and returns what to insert instead
   * (core's webhook fan-out adds deliveries and `pending_endpoints`). It must be safe to repeat: a crash
   * after it and before the pull runs it again on the same events, some perhaps already copied.
   */
  prepare?: (events: Relayed[]) => Promise<Relayed[]>;
  /** Told, without waiting, of the events (as `prepare` returned them) once they are all in `events`. */
  copied?: (events: readonly Relayed[]) => void;
}

/**
 * The event relay (ARCHITECTURE data rule 2, in ../shared/docs/): copies each pending event of a
 * document into `events` (inserted by its own `_id`, so a second copy is a duplicate key, not a second
 * event), then pulls exactly the copied ids from the document. An event is pulled only after its copy
 * is known to exist, so a crash at any point leaves it pending (copied again later, harmlessly), never
 * lost. A tombstone goes once its outbox is empty and its idempotency window has closed, so a retried
 * create still finds its first result until then.
 *
 * Fast path: the write path calls `notify` with the document it just wrote (no waiting in the request).
 * Slow path: `sweep` finds documents with pending events that a crash left, in bounded batches.
 */
export class OutboxRelay {
  private readonly events: Collection<Relayed>;
  private readonly now: () => number;
  private readonly queued = new Set<string>();
  private draining: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private lastRetentionPass = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly db: Db,
    private readonly options: RelayOptions,
  ) {
    this.events = db.collection<Relayed>(EVENTS_COLLECTION);
    this.now = options.now ?? Date.now;
  }

  /** Tells the relay a document was just written; returns at once, the relay works in the background. */
  notify(collection: string, id: string): void {
    if (this.stopped) return;
    this.queued.add(`${collection}\u0000${id}`);
    this.draining ??= this.drain().finally(() => {
      this.draining = null;
    });
  }

  /** Resolves once every notified document has been relayed (for an orderly stop). */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** FAST_PATH_CONCURRENCY lanes, each relaying a batch of documents at a time: each batch is a few sequential round trips, and writes come faster than that. */
  private async drain(): Promise<void> {
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
    const docs = await collection.find({ _id: { $in: [...ids] } } as Filter<TenantDocument>, { projection: { pending_events: 1, deleted: 1 }, ...LIMIT }).toArray();
    const withEvents = docs.filter((doc) => (doc.pending_events ?? []).length > 0);
    const events = withEvents.flatMap((doc) => doc.pending_events as Relayed[]);
    if (events.length > 0) {
      const prepared = this.options.prepare ? await this.options.prepare(events) : events;
      await this.copy(prepared);
      this.options.copied?.(prepared);
      // Only ids whose copy exists now are pulled; an event pushed since the read is not among them.
      await collection.bulkWrite(
        withEvents.map((doc) => ({
          updateOne: {
            filter: { _id: doc._id } as Filter<TenantDocument>,
            update: { $pull: { pending_events: { _id: { $in: (doc.pending_events as Relayed[]).map((event) => event._id) } } } } as never,
          },
        })),
        { ordered: false, ...LIMIT },
      );
    }
    for (const doc of docs) if (doc.deleted) await this.removeTombstone(collection, doc._id);
    return events.length;
  }

  /** Relays one document's pending events, then removes it if it is a tombstone whose time has come. Returns the events moved. */
  async relayDocument(collectionName: string, id: string): Promise<number> {
    const collection = this.db.collection<TenantDocument>(collectionName);
    const doc = await collection.findOne({ _id: id } as Filter<TenantDocument>, { projection: { pending_events: 1, deleted: 1 }, ...LIMIT });
    if (!doc) return 0;
    const pending = (doc.pending_events ?? []) as Relayed[];
    if (pending.length > 0) {
      const prepared = this.options.prepare ? await this.options.prepare(pending) : pending;
      await this.copy(prepared);
      this.options.copied?.(prepared);
      const ids = pending.map((event) => event._id);
      // Only ids whose copy exists now are pulled; an event pushed since the read is not among them.
      await collection.updateOne({ _id: id } as Filter<TenantDocument>, { $pull: { pending_events: { _id: { $in: ids } } } } as never, LIMIT);
    }
    if (doc.deleted) await this.removeTombstone(collection, id);
    return pending.length;
  }

  /** Inserts each event by its id (one unordered insert); a duplicate key means an earlier run already copied that one. */
  private async copy(events: readonly Relayed[]): Promise<void> {
    try {
      await this.events.insertMany([...events], { ordered: false, ...LIMIT });
    } catch (error) {
      if (!onlyDuplicateKeys(error)) throw error;
    }
  }

  /** Deletes a tombstone whose outbox is empty and whose Idempotency-Key window (from its creation) has closed. */
  private async removeTombstone(collection: Collection<TenantDocument>, id: string): Promise<boolean> {
    if (idTimeMs(id) + IDEMPOTENCY_RETENTION_MS > this.now()) return false;
    const result = await collection.deleteOne({ _id: id, deleted: true, pending_events: { $size: 0 } } as Filter<TenantDocument>, LIMIT);
    return result.deletedCount === 1;
  }

  /**
   * One pass over every source: documents with pending events (up to SWEEP_BATCH each), then the oldest
   * tombstones with an empty outbox (ids sort by creation time, so the oldest come first and a young
   * tombstone never hides an expired one); then events past their retention. Returns the events
   * moved, tombstones removed and old events deleted.
   */
  async sweep(): Promise<{ events: number; tombstones: number; expired: number }> {
    let events = 0;
    let tombstones = 0;
    for (const name of this.options.sources) {
      const collection = this.db.collection<TenantDocument>(name);
      const stuck = await collection
        .find(HAS_PENDING_EVENTS as Filter<TenantDocument>, { projection: { _id: 1 }, ...LIMIT })
        .limit(SWEEP_BATCH)
        .toArray();
      if (stuck.length > 0)
        events += await this.relayDocuments(
          name,
          stuck.map(({ _id }) => _id),
        );
      const graves = await collection
        .find({ deleted: true, pending_events: { $size: 0 } } as Filter<TenantDocument>, { projection: { _id: 1 }, ...LIMIT })
        .sort({ _id: 1 })
        .limit(SWEEP_BATCH)
        .toArray();
      for (const { _id } of graves) {
        if (!(await this.removeTombstone(collection, _id))) break;
        tombstones++;
      }
    }
    let expired = 0;
    if (this.now() - this.lastRetentionPass >= RETENTION_PASS_INTERVAL_MS) {
      const cutoff = Math.floor((this.now() - EVENT_RETENTION_MS) / 1000);
      expired = (await this.events.deleteMany({ created: { $lt: cutoff } }, LIMIT)).deletedCount;
      this.lastRetentionPass = this.now();
    }
    return { events, tombstones, expired };
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

/** An unordered insert whose only failures are duplicate keys (events an earlier run already copied). */
function onlyDuplicateKeys(error: unknown): boolean {
  if (!(error instanceof MongoBulkWriteError)) return isDuplicateKeyError(error);
  const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
  return !error.writeConcernError && writeErrors.length > 0 && writeErrors.every((w) => w.code === 11000);
}
