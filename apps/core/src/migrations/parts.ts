import type { AnyBulkWriteOperation, Collection, Db, Document, Filter, UpdateFilter } from "mongodb";
import type { StepPart } from "./step.js";

/** NamespaceNotFound: the collection does not exist (a new database). */
const NAMESPACE_NOT_FOUND = 26;
/** NamespaceNotFound (26), IndexNotFound (27): nothing to drop (another process dropped it first). */
const NOTHING_TO_DROP = new Set<unknown>([NAMESPACE_NOT_FOUND, 27]);
/** A count for a dry run stops here ("at least"), so a look at a large collection stays a bounded read. */
const COUNT_LIMIT = 100_000;

/** The indexes of a collection, none when it does not exist. */
async function indexesOf(collection: Collection): Promise<Document[]> {
  return collection
    .listIndexes()
    .toArray()
    .catch((error: { code?: unknown }) => {
      if (error.code === NAMESPACE_NOT_FOUND) return [];
      throw error;
    });
}

/**
 * Drops the indexes named that a collection has, one batch. It looks first: `dropIndexes` takes the collection's
 * exclusive lock before it finds out there is nothing to drop, and that lock waits behind every open transaction on
 * the collection, such as one a SIGKILLed core left for the server to reap (up to its 60 s transaction lifetime).
 */
export function dropIndexes(collectionName: string, names: readonly string[], which: (index: Document) => boolean = () => true): StepPart {
  const present = async (db: Db) => (await indexesOf(db.collection(collectionName))).filter((index) => names.includes(index.name as string) && which(index));
  return {
    async pending(db) {
      const found = (await present(db)).map((index) => index.name as string);
      return found.length === 0 ? null : `${collectionName}: drop ${found.map((name) => `index ${name}`).join(", ")}`;
    },
    async batch(db) {
      let changed = 0;
      for (const index of await present(db)) {
        await db
          .collection(collectionName)
          .dropIndex(index.name as string)
          .then(
            () => changed++,
            (error: { code?: unknown }) => {
              if (!NOTHING_TO_DROP.has(error.code)) throw error;
            },
          );
      }
      return { after: null, changed };
    },
  };
}

/** What a walk does with the documents of one batch that still have the old shape. */
type Change<D extends Document> =
  | { readonly update: UpdateFilter<D> | Document[] }
  | { readonly delete: true }
  /** Per document, from the fields `read`: the update, or null to leave it. Its write filters on those fields too. */
  | { readonly read: readonly string[]; readonly convert: (doc: D) => UpdateFilter<D> | null };

export interface WalkSpec<D extends Document> {
  readonly collection: string;
  /** The old shape: only documents matching it are changed, each write filters on it again. */
  readonly where: Filter<D>;
  /** How `pending` names what it counts ("records without expires_at"). */
  readonly what: string;
}

/**
 * Walks a collection in `_id` order, a batch of `size` ids at a time (a read of the `_id` index alone), and changes
 * the documents of that range that still match `where` (one write per batch). The collection stays in use: every
 * write is an ordinary one over at most `size` documents, and a document the service changed meanwhile is left as
 * it is unless it still has the old shape. The position is the batch's last id, so a killed run resumes after it.
 */
export function walkDocuments<D extends Document>(spec: WalkSpec<D> & Change<D>): StepPart {
  return {
    async pending(db) {
      const count = await db.collection<D>(spec.collection).countDocuments(spec.where, { limit: COUNT_LIMIT });
      if (count === 0) return null;
      return `${spec.collection}: ${count === COUNT_LIMIT ? `at least ${count}` : count} ${spec.what}`;
    },
    async batch(db, after, size) {
      const collection = db.collection<D>(spec.collection);
      const range = after === null || after === undefined ? {} : { _id: { $gt: after } };
      const ids = (await collection.find(range as Filter<D>, { projection: { _id: 1 }, sort: { _id: 1 }, limit: size }).toArray()).map((doc) => doc._id);
      if (ids.length === 0) return { after: null, changed: 0 };
      const inBatch = { $and: [{ _id: { $gte: ids[0], $lte: ids.at(-1) } }, spec.where] } as Filter<D>;
      const changed = await change(collection, inBatch, spec);
      return { after: ids.length < size ? null : ids.at(-1), changed };
    },
  };
}

async function change<D extends Document>(collection: Collection<D>, inBatch: Filter<D>, spec: WalkSpec<D> & Change<D>): Promise<number> {
  if ("update" in spec) return (await collection.updateMany(inBatch, spec.update)).modifiedCount;
  if ("delete" in spec) return (await collection.deleteMany(inBatch)).deletedCount;
  const projection = Object.fromEntries(spec.read.map((field) => [field, 1]));
  const docs = await collection.find(inBatch, { projection }).toArray();
  const writes: AnyBulkWriteOperation<D>[] = [];
  for (const doc of docs) {
    const update = spec.convert(doc as D);
    if (!update) continue;
    // The document as read, in the old shape: a write of the service in between wins.
    const same = Object.fromEntries(spec.read.map((field) => [field, (doc as Document)[field] ?? null]));
    writes.push({ updateOne: { filter: { $and: [{ _id: doc._id, ...same }, spec.where] } as Filter<D>, update } });
  }
  if (writes.length === 0) return 0;
  return (await collection.bulkWrite(writes, { ordered: false })).modifiedCount;
}
