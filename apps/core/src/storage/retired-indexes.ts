import type { Collection, Document } from "mongodb";

/** NamespaceNotFound (26), IndexNotFound (27): nothing to drop (a new database, or another core dropped it first). */
const NOTHING_TO_DROP = new Set<unknown>([26, 27]);

/**
 * Drops the indexes an earlier version declared and no query uses any more, when they are there. It looks first:
 * `dropIndexes` takes the collection's exclusive lock before it finds out there is nothing to drop, and that lock
 * waits behind every open transaction on the collection, such as one a SIGKILLed core left for the server to reap
 * (up to its 60 s transaction lifetime): a core starting then would wait that long before serving.
 */
export async function dropRetiredIndexes<T extends Document>(collection: Collection<T>, names: readonly string[]): Promise<void> {
  const present = await collection
    .listIndexes()
    .toArray()
    .catch((error: { code?: unknown }) => {
      if (error.code === 26) return [];
      throw error;
    });
  for (const name of names) {
    if (!present.some((index) => index.name === name)) continue;
    await collection.dropIndex(name).catch((error: { code?: unknown }) => {
      if (!NOTHING_TO_DROP.has(error.code)) throw error;
    });
  }
}
