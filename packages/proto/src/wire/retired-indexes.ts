/** The two collection methods a retired index's drop needs (the driver's `Collection` has them; no driver here). */
export interface IndexedCollection {
  listIndexes(): { toArray(): Promise<readonly { name?: unknown }[]> };
  dropIndex(name: string): Promise<unknown>;
}

/** NamespaceNotFound (26), IndexNotFound (27): nothing to drop (a new database, or another process dropped it first). */
const NOTHING_TO_DROP = new Set<unknown>([26, 27]);

/**
 * Drops the indexes an earlier version declared and no query uses any more, when they are there (core and the
 * gateway at start). It looks first: `dropIndexes` takes the collection's exclusive lock before it finds out there is
 * nothing to drop, and that lock waits behind every open transaction on the collection, such as one a SIGKILLed
 * core left for the server to reap (up to its 60 s transaction lifetime).
 */
export async function dropRetiredIndexes(collection: IndexedCollection, names: readonly string[]): Promise<void> {
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
