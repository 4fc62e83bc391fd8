import type { MetadataPair } from "../../metadata.js";
import type { ImportItem } from "../model.js";
import { type CsvColumns, FileInvalidError, type RowError } from "./model.js";

/**
 * A row's fields as an import item, with the JSON types checked (what the API checks of an inline item);
 * the resource rules (name present and short enough, a known status, metadata keys and values) are the
 * import's per-item rules (jobs/items.ts), applied when the row is imported, as for every item.
 */
export type ItemOrError = { item: ImportItem; error: null } | { item: null; error: RowError };

const FIELDS = new Set(["name", "status", "metadata"]);

function rowError(code: string, param: string | null, message: string): ItemOrError {
  return { item: null, error: { code, param, message } };
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** A JSONL line (without its line break) as an item: one JSON object with `name`, `status` and `metadata`. */
export function jsonLineItem(text: string): ItemOrError {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return rowError("parameter_invalid", null, "This line is not valid JSON: each line must be one JSON object.");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return rowError("parameter_invalid", null, `This line must be one JSON object, got ${describe(value)}.`);
  }
  const fields = value as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!FIELDS.has(key)) return rowError("parameter_unknown", key.slice(0, 100), `Received unknown parameter: ${key.slice(0, 100)}.`);
  }
  const item: ImportItem = {};
  for (const key of ["name", "status"] as const) {
    const field = fields[key];
    if (field === undefined) continue;
    if (typeof field !== "string") return rowError("parameter_invalid", key, `Invalid ${key}: must be a string, got ${describe(field)}.`);
    item[key] = field;
  }
  const metadata = fields["metadata"];
  if (metadata !== undefined) {
    if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata)) {
      return rowError("metadata_invalid", "metadata", `Invalid metadata: must be an object of key-value pairs, got ${describe(metadata)}.`);
    }
    const pairs: MetadataPair[] = [];
    for (const [k, v] of Object.entries(metadata as Record<string, unknown>)) {
      // As the API takes an inline item's metadata: strings, and numbers and booleans as their text.
      if (typeof v === "string") pairs.push({ k, v });
      else if ((typeof v === "number" && Number.isFinite(v)) || typeof v === "boolean") pairs.push({ k, v: String(v) });
      else
        return rowError(
          "metadata_invalid",
          `metadata[${k.slice(0, 40)}]`,
          `Invalid value for metadata[${k.slice(0, 40)}]: values must be strings, got ${describe(v)}.`,
        );
    }
    if (pairs.length > 0) item.metadata = pairs;
  }
  return { item, error: null };
}

const METADATA_COLUMN = /^metadata\[(.+)\]$/s;

/**
 * A CSV header as columns: `name` (required), `status`, and `metadata[key]` columns, each once. Anything else
 * makes the file unreadable as an import (FileInvalidError): a column the import would silently drop is more
 * likely a mistake than a wish (docs/files.md, "CSV").
 */
export function csvColumns(header: readonly string[]): CsvColumns {
  let name: number | null = null;
  let status: number | null = null;
  const metadata: [string, number][] = [];
  const seen = new Set<string>();
  header.forEach((column, index) => {
    if (seen.has(column)) throw new FileInvalidError(`The CSV header names the column "${column.slice(0, 100)}" twice.`);
    seen.add(column);
    if (column === "name") name = index;
    else if (column === "status") status = index;
    else {
      const key = METADATA_COLUMN.exec(column)?.[1];
      if (key === undefined) {
        throw new FileInvalidError(`The CSV header has an unknown column "${column.slice(0, 100)}": columns are name, status and metadata[key].`);
      }
      metadata.push([key, index]);
    }
  });
  if (name === null) throw new FileInvalidError("The CSV header has no name column: the first line must name the columns (name, status, metadata[key]).");
  return { count: header.length, name, status, metadata };
}

/** A CSV record as an item: an empty cell sets nothing (an empty name is a missing name). */
export function csvRecordItem(record: readonly string[], columns: CsvColumns): ItemOrError {
  if (record.length !== columns.count) {
    return rowError("parameter_invalid", null, `This row has ${record.length} fields; the header has ${columns.count}.`);
  }
  const item: ImportItem = {};
  const name = record[columns.name]!;
  if (name !== "") item.name = name;
  if (columns.status !== null && record[columns.status] !== "") item.status = record[columns.status]!;
  const pairs: MetadataPair[] = [];
  for (const [k, index] of columns.metadata) if (record[index] !== "") pairs.push({ k, v: record[index]! });
  if (pairs.length > 0) item.metadata = pairs;
  return { item, error: null };
}
