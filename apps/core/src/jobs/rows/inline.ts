import type { ImportItem } from "../model.js";

/**
 * An inline import's items as the JSONL file the create stores (CONTRACT.md section 11: every import reads a
 * file): item i on line i + 1, each `{"name","status","metadata"}` as given (types checked by the API; the
 * resource rules are applied per row when the job runs, as for any file).
 */
export function itemsAsJsonl(items: readonly ImportItem[]): Buffer {
  const lines = items.map((item) => {
    const row: Record<string, unknown> = {};
    if (item.name !== undefined) row["name"] = item.name;
    if (item.status !== undefined) row["status"] = item.status;
    if (item.metadata !== undefined) {
      // A map with a null prototype: `__proto__` is a key like any other (data rule 6).
      const metadata = Object.create(null) as Record<string, string>;
      for (const { k, v } of item.metadata) metadata[k] = v;
      row["metadata"] = metadata;
    }
    return `${JSON.stringify(row)}\n`;
  });
  return Buffer.from(lines.join(""));
}
