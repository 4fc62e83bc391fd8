/** One item of an inline import (`params.items`, CONTRACT.md section 6). */
export interface ImportItem {
  name?: string;
  status?: string;
  metadata?: Record<string, string>;
}

/** The most items an inline import takes. */
export const INLINE_IMPORT_MAX = 10_000;

/**
 * A CSV (header `name`, optional `status`, `metadata[key]` columns; an empty cell sets nothing) or JSONL file read
 * in the browser into import items, for a server without the files API: the same rows the file import reads.
 */
export async function itemsOfFile(name: string, text: string): Promise<ImportItem[]> {
  if (/\.(jsonl|ndjson)$/i.test(name)) {
    return text
      .split(/\r?\n/)
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line) as ImportItem);
  }
  const { default: Papa } = await import("papaparse");
  const parsed = Papa.parse<Record<string, string>>(text.replace(/^\uFEFF/, ""), { header: true, skipEmptyLines: true });
  if (!parsed.meta.fields?.includes("name")) throw new Error("The CSV's header row has no `name` column.");
  return parsed.data.map((row) => {
    const item: ImportItem = {};
    const metadata: Record<string, string> = {};
    for (const [column, value] of Object.entries(row)) {
      if (value === "" || value === undefined) continue;
      if (column === "name") item.name = value;
      else if (column === "status") item.status = value;
      else {
        const key = /^metadata\[(.+)\]$/.exec(column)?.[1];
        if (key) metadata[key] = value;
      }
    }
    if (Object.keys(metadata).length > 0) item.metadata = metadata;
    return item;
  });
}
