/** A store with indexes to declare; `openStores` declares every store's indexes at start, in the background. */
export interface Indexed {
  ensureIndexes(): Promise<void>;
}
