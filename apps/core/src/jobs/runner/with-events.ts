import { isDuplicateKeyError } from "@rms/proto";
import { MongoBulkWriteError, type AnyBulkWriteOperation, type Collection, type Filter } from "mongodb";
import type { MarkedResource } from "../../resources/batch.js";
import type { PendingEvent, ResourceDocument } from "../../resources/model.js";
import { RESOURCES_COLLECTION } from "../../resources/store.js";
import type { AfterCommit } from "../../storage/published-events.js";
import type { JobRun } from "./seam.js";

/**
 * A bulk job's chunk written with its events in the same batch (docs/events.md, "Events in the same batch"): the
 * chunk's changes and one event per change go into one transaction, so they commit together or not at all, and no
 * outbox is left for a relay to read, copy into `events` and pull. What is exactly-once stays where it was: the
 * imported ids derive from the job and the row, the updates are versioned and carry the job's mark; a transaction
 * that did not commit changed nothing, and one that did is found by the chunk's redo.
 */

/** Times a chunk's transaction is tried again when it met a duplicate key (another run committed the same ids first). */
const DUPLICATE_RETRIES = 3;

const REFUSED = "The database refused this item's resource.";
const REFUSED_CHANGE = "The database refused this item's change.";

/** A write the database refused for what a document is (not a duplicate key, not a failure of the whole command). */
function refusedDocument(error: unknown): boolean {
  if (!(error instanceof MongoBulkWriteError) || error.writeConcernError) return false;
  const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : error.writeErrors ? [error.writeErrors] : [];
  return writeErrors.length > 0 && writeErrors.some((w) => w.code !== 11000);
}

/** `write` again after a duplicate key: the ids it met are committed now, and its read inside the transaction finds them. */
async function throughDuplicates<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      if (attempt > DUPLICATE_RETRIES || !isDuplicateKeyError(error)) throw error;
    }
  }
}

/**
 * `items` written together by `write`; when the database refuses one of them for what it is, each is written alone
 * so that one fails alone (the refusals answered by position). A failure of the whole write is thrown.
 */
async function aloneWhenRefused<I>(items: readonly I[], write: (items: readonly I[]) => Promise<void>, message: string): Promise<Map<number, string>> {
  const refused = new Map<number, string>();
  try {
    await write(items);
    return refused;
  } catch (error) {
    if (!refusedDocument(error)) throw error;
  }
  for (const [position, item] of items.entries()) {
    try {
      await write([item]);
    } catch (error) {
      if (!refusedDocument(error)) throw error;
      refused.set(position, message);
    }
  }
  return refused;
}

/** A resource as stored when its events are not in its outbox (the chunk publishes them). */
function withoutOutbox({ pending_events: _events, ...resource }: ResourceDocument): ResourceDocument {
  return resource as ResourceDocument;
}

/**
 * An import's chunk: the new resources (each with its `resource.created` event in `pending_events`, as made) and
 * their events, in one transaction. The ones already stored (a chunk redone after a takeover) are read inside it and
 * left alone, with their events, committed with them. Answers the refused documents by position.
 */
export function insertWithEvents(run: JobRun, docs: readonly ResourceDocument[]): Promise<Map<number, string>> {
  if (docs.length === 0) return Promise.resolve(new Map());
  const resources = run.db.collection<ResourceDocument>(RESOURCES_COLLECTION);
  return aloneWhenRefused(docs, (some) => throughDuplicates(() => insertTogether(run, resources, some)), REFUSED);
}

async function insertTogether(run: JobRun, resources: Collection<ResourceDocument>, docs: readonly ResourceDocument[]): Promise<void> {
  const after = await run.inTransaction(async (session): Promise<AfterCommit | null> => {
    const ids = docs.map((d) => d._id);
    const stored = new Set(
      (await resources.find({ _id: { $in: ids } } as Filter<ResourceDocument>, { projection: { _id: 1 }, session }).toArray()).map((d) => d._id),
    );
    const fresh = docs.filter((d) => !stored.has(d._id));
    if (fresh.length === 0) return null;
    await resources.insertMany(fresh.map(withoutOutbox), { session });
    return run.publish(
      fresh.flatMap((d) => d.pending_events),
      session,
    );
  });
  await after?.();
}

/** One versioned, marked change of a bulk update, without its event in the outbox (`direct`), and that event. */
export interface DirectWrite {
  readonly id: string;
  readonly op: AnyBulkWriteOperation<MarkedResource>;
  readonly event: PendingEvent;
}

/**
 * A bulk update's round: the versioned, marked changes and the events of those that applied, in one transaction (a
 * change that lost a race matches nothing: it is not marked by `job`, read inside the transaction, and gets no
 * event). Answers which applied and which the database refused, by position.
 */
export async function updateWithEvents(run: JobRun, writes: readonly DirectWrite[]): Promise<{ applied: Set<string>; refused: Map<number, string> }> {
  const resources = run.db.collection<MarkedResource>(RESOURCES_COLLECTION);
  const applied = new Set<string>();
  const refused = await aloneWhenRefused(
    writes,
    async (some) => {
      for (const id of await updateTogether(run, resources, some)) applied.add(id);
    },
    REFUSED_CHANGE,
  );
  return { applied, refused };
}

async function updateTogether(run: JobRun, resources: Collection<MarkedResource>, writes: readonly DirectWrite[]): Promise<string[]> {
  let landed: string[] = [];
  const after = await run.inTransaction(async (session): Promise<AfterCommit | null> => {
    const result = await resources.bulkWrite(
      writes.map((w) => w.op),
      { ordered: false, session },
    );
    // Every versioned write matched: each landed (the usual case); else the job's mark says which.
    landed =
      result.matchedCount === writes.length
        ? writes.map((w) => w.id)
        : (
            await resources
              .find({ _id: { $in: writes.map((w) => w.id) }, job_marks: run.job._id } as Filter<MarkedResource>, { projection: { _id: 1 }, session })
              .toArray()
          ).map((d) => d._id);
    const events = new Set(landed);
    const published = writes.filter((w) => events.has(w.id)).map((w) => w.event);
    return published.length === 0 ? null : run.publish(published, session);
  });
  await after?.();
  return landed;
}
