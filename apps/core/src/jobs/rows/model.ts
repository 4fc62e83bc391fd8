import type { ImportItem } from "../model.js";

/**
 * Rows of an import file (CONTRACT.md section 11, "Import from a file"), as the import job reads them: one row
 * after another from a byte position, each with its line (1-based, physical lines of the file) and the
 * position just after it, so a job checkpoints "everything before this byte is done" and a takeover goes on
 * from there (docs/files.md, "Imports").
 */

/** The formats of an import file. */
export type RowFormat = "jsonl" | "csv";

/** A position in an import file: a byte offset at a line start, and how many lines lie before it. */
export interface RowCursor {
  offset: number;
  /** Lines wholly before `offset`: the line starting at `offset` is `line + 1`. */
  line: number;
}

export const FILE_START: RowCursor = { offset: 0, line: 0 };

/** A CSV file's header, as the import keeps it in its checkpoint: which column holds what. */
export interface CsvColumns {
  /** The header's field count. */
  count: number;
  name: number;
  status: number | null;
  /** `metadata[key]` columns: the key and the column's position. */
  metadata: [string, number][];
}

/** Why one row fails (the job goes on): as `result.errors` and the results file show it. */
export interface RowError {
  code: string;
  param: string | null;
  message: string;
}

/** One row as read: its line, where the next row starts, and the item it holds or why it holds none. */
export interface Row {
  line: number;
  end: RowCursor;
  item: ImportItem | null;
  error: RowError | null;
}

/** What the reader meets, in file order: a CSV header (once, at the file's start), then rows. */
export type RowEvent = { kind: "header"; columns: CsvColumns; end: RowCursor } | ({ kind: "row" } & Row);

/** A file that cannot be read as its type at all: the job fails with `file_invalid` (before anything is created). */
export class FileInvalidError extends Error {
  override readonly name = "FileInvalidError";
  readonly code = "file_invalid";
}

/** The longest row read (bytes): far beyond any valid row (a name of 200 and 50 metadata pairs of 40 + 500). */
export const ROW_BYTES_MAX = 1024 * 1024;
