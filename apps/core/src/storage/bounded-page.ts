import type { FindCursor } from "mongodb";

/**
 * Most bytes (as JSON) of the large fields one list page carries. A gRPC answer may carry 4 MiB; a job's
 * params (and a `job.*` event's snapshot of them) can reach about 1 MiB, so a page of such objects stops
 * early rather than fail: it holds fewer than `limit` items and says `hasMore`.
 */
export const PAGE_BYTES_MAX = 2 * 1024 * 1024;

/**
 * Reads one keyset page from a cursor sorted and limited to `limit + 1`: at most `limit` items, and fewer
 * once `sizeOf` of them passes `maxBytes` (always at least one). `hasMore` is true when an item was left
 * for the next page. Stops reading as soon as the page is full, and closes the cursor.
 */
export async function boundedPage<T>(
  cursor: FindCursor<T>,
  limit: number,
  sizeOf: (item: T) => number,
  maxBytes: number = PAGE_BYTES_MAX,
): Promise<{ items: T[]; hasMore: boolean }> {
  const items: T[] = [];
  let hasMore = false;
  let bytes = 0;
  try {
    for await (const item of cursor) {
      if (items.length === limit) {
        hasMore = true;
        break;
      }
      bytes += sizeOf(item);
      if (items.length > 0 && bytes > maxBytes) {
        hasMore = true;
        break;
      }
      items.push(item);
    }
  } finally {
    await cursor.close();
  }
  return { items, hasMore };
}
