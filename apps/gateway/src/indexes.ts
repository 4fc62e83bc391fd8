import type { Collection, Document } from "mongodb";

/** A store with indexes to declare; `openStores` declares every store's indexes at start, in the background. */
export interface Indexed {
  ensureIndexes(): Promise<void>;
}

/** What `dropIndex` answers when there is nothing to drop: NamespaceNotFound (26), IndexNotFound (27). */
const NOTHING_TO_DROP = new Set<unknown>([26, 27]);

/**
 * Drops an index that an earlier version declared and no query uses any more (it would only cost every write);
 * absent already (new database, or another gateway dropped it first) is fine.
 */
export async function dropRetiredIndex<T extends Document>(collection: Collection<T>, name: string): Promise<void> {
  // Looked for first: `dropIndexes` takes the collection's exclusive lock before it finds nothing to drop.
  const present = await collection
    .listIndexes()
    .toArray()
    .catch((error: { code?: unknown }) => {
      if (error.code === 26) return [];
      throw error;
    });
  if (!present.some((index) => index.name === name)) return;
  try {
    await collection.dropIndex(name);
  } catch (error) {
    if (!NOTHING_TO_DROP.has((error as { code?: unknown }).code)) throw error;
  }
}
