import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { CsvError, parse } from "csv-parse";
import { csvColumns, csvRecordItem, type ItemOrError, jsonLineItem } from "./items.js";
import { type CsvColumns, FileInvalidError, ROW_BYTES_MAX, type RowCursor, type RowEvent, type RowFormat } from "./model.js";
import { Utf8Check } from "./utf8.js";

const NL = 0x0a;
const CR = 0x0d;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * The rows of an import file from `from` on: `source` yields the file's bytes from `from.offset` to its end,
 * in chunks of any size (a row may be split across chunks). Yields a CSV file's header first when reading from
 * the start (`columns` then null; else the header the caller kept). Stop at any row: every event's `end` is a
 * position to go on from. Throws FileInvalidError when the bytes cannot be read as the format at all (not
 * UTF-8; a CSV header without `name`, an unclosed quote, a record over ROW_BYTES_MAX).
 */
export function readRows(
  source: AsyncIterable<Buffer>,
  format: RowFormat,
  from: RowCursor,
  columns: CsvColumns | null = null,
  options: ReadOptions = {},
): AsyncGenerator<RowEvent> {
  const items = options.items ?? true;
  return format === "jsonl" ? jsonlRows(source, from, items) : csvRows(source, from, columns, items);
}

export interface ReadOptions {
  /**
   * False: rows are counted, not read as items (`item` and `error` both null). The file is still checked as its
   * type (UTF-8, CSV structure): what an import's scan needs, without parsing every JSON line twice.
   */
  items?: boolean;
}

function row(line: number, end: RowCursor, parsed: ItemOrError | null): RowEvent {
  return { kind: "row", line, end, item: parsed?.item ?? null, error: parsed?.error ?? null };
}

/**
 * JSONL: one row per line (`\n`, a `\r` before it dropped); a line of only spaces is skipped but counted.
 * A line longer than ROW_BYTES_MAX is an error of its row (skipped to its end), not of the file.
 */
async function* jsonlRows(source: AsyncIterable<Buffer>, from: RowCursor, items: boolean): AsyncGenerator<RowEvent> {
  const utf8 = new Utf8Check(from.offset);
  let pending: Buffer = Buffer.alloc(0);
  let start = from.offset;
  let line = from.line;
  let atFileStart = from.offset === 0;
  /** In a line too long to read: its first line number, skipping to its end. */
  let tooLong: number | null = null;
  const lineEvent = (bytes: Buffer, end: number): RowEvent | null => {
    line++;
    const cursor = { offset: end, line };
    let text = bytes.length > 0 && bytes[bytes.length - 1] === CR ? bytes.subarray(0, -1) : bytes;
    if (atFileStart) {
      atFileStart = false;
      if (text.subarray(0, 3).equals(BOM)) text = text.subarray(3);
    }
    const decoded = text.toString("utf8");
    if (decoded.trim() === "") return null;
    return row(line, cursor, items ? jsonLineItem(decoded) : null);
  };
  for await (const chunk of source) {
    utf8.push(chunk);
    let bytes = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    let searchFrom = pending.length;
    let pos = 0;
    for (;;) {
      const nl = bytes.indexOf(NL, searchFrom);
      if (nl < 0) break;
      const end = start + nl + 1;
      if (tooLong !== null) {
        line++;
        yield row(tooLong, { offset: end, line }, tooLongRow());
        tooLong = null;
      } else {
        const event = lineEvent(bytes.subarray(pos, nl), end);
        if (event) yield event;
      }
      pos = nl + 1;
      searchFrom = pos;
    }
    start += pos;
    bytes = bytes.subarray(pos);
    if (bytes.length > ROW_BYTES_MAX) {
      // Skip the rest of this line: only its end matters now.
      if (tooLong === null) tooLong = line + 1;
      start += bytes.length;
      bytes = Buffer.alloc(0);
    }
    pending = Buffer.from(bytes);
  }
  utf8.end();
  if (tooLong !== null) {
    yield row(tooLong, { offset: start, line: line + 1 }, tooLongRow());
  } else if (pending.length > 0) {
    // The last line, without a line break.
    const event = lineEvent(pending, start + pending.length);
    if (event) yield { ...event, end: { offset: start + pending.length, line: line - 1 } } as RowEvent;
  }
}

function tooLongRow(): ItemOrError {
  return { item: null, error: { code: "parameter_invalid", param: null, message: `This line is longer than ${ROW_BYTES_MAX} bytes.` } };
}

/** The bytes read so far that a record may still refer to, by absolute offset. */
class Window {
  private chunks: { start: number; bytes: Buffer }[] = [];

  add(start: number, bytes: Buffer): void {
    this.chunks.push({ start, bytes });
  }

  /** The bytes of `[from, to)` (they were added), and drops what lies before `to`. */
  take(from: number, to: number): Buffer {
    const parts: Buffer[] = [];
    for (const { start, bytes } of this.chunks) {
      const a = Math.max(from, start);
      const b = Math.min(to, start + bytes.length);
      if (a < b) parts.push(bytes.subarray(a - start, b - start));
    }
    while (this.chunks.length > 0 && this.chunks[0]!.start + this.chunks[0]!.bytes.length <= to) this.chunks.shift();
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }
}

function newlines(bytes: Buffer): number {
  let count = 0;
  for (let i = bytes.indexOf(NL); i >= 0; i = bytes.indexOf(NL, i + 1)) count++;
  return count;
}

function isBlankLine(bytes: Buffer): boolean {
  return bytes.length === 0 || (bytes.length === 1 && bytes[0] === NL) || (bytes.length === 2 && bytes[0] === CR && bytes[1] === NL);
}

/**
 * CSV (RFC 4180 by csv-parse: quoted fields with `""`, line breaks inside quotes; records end at CRLF or LF;
 * an optional BOM). Lines are counted from the bytes, so a row's `line` is the line it starts on; a blank line
 * is skipped but counted.
 */
async function* csvRows(source: AsyncIterable<Buffer>, from: RowCursor, known: CsvColumns | null, items: boolean): AsyncGenerator<RowEvent> {
  const window = new Window();
  const utf8 = new Utf8Check(from.offset);
  async function* fed(): AsyncGenerator<Buffer> {
    let at = from.offset;
    for await (const chunk of source) {
      utf8.push(chunk);
      window.add(at, chunk);
      at += chunk.length;
      yield chunk;
    }
    utf8.end();
  }
  const parser = parse({
    bom: from.offset === 0,
    info: true,
    relax_column_count: true,
    skip_empty_lines: false,
    record_delimiter: ["\r\n", "\n"],
    max_record_size: ROW_BYTES_MAX,
  });
  const feeding = pipeline(Readable.from(fed()), parser);
  feeding.catch(() => {}); // its error reaches the loop below through the parser; an early stop is no error
  let columns = known;
  let offset = from.offset;
  let line = from.line;
  try {
    for await (const { record, info } of parser as AsyncIterable<{ record: string[]; info: { bytes: number } }>) {
      const end = from.offset + info.bytes;
      const bytes = window.take(offset, end);
      const first = line + 1;
      line += newlines(bytes);
      offset = end;
      // A final record without a line break ends on the line it started on.
      if (line < first) line = first - 1;
      const cursor = { offset: end, line: Math.max(line, first - 1) };
      if (record.length === 1 && record[0] === "" && isBlankLine(bytes)) continue;
      if (columns === null) {
        columns = csvColumns(record);
        yield { kind: "header", columns, end: cursor };
        continue;
      }
      yield row(first, cursor, items ? csvRecordItem(record, columns) : null);
    }
  } catch (error) {
    if (error instanceof CsvError) throw new FileInvalidError(`The file is not valid CSV near line ${line + 1}: ${error.message}`);
    throw error;
  } finally {
    parser.destroy();
  }
  if (columns === null) throw new FileInvalidError("The CSV file is empty: its first line must name the columns (name, status, metadata[key]).");
}
