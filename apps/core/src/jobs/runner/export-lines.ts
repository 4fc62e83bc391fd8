import { stringify } from "csv-stringify/sync";
import { publicResource } from "../../resources/render.js";
import type { AnsweredResource } from "../../resources/model.js";

/** The CSV columns of an export, in order (CONTRACT.md section 11). */
export const EXPORT_CSV_COLUMNS = ["id", "name", "status", "created", "metadata"] as const;

/** The public resource object, one JSON line. */
export function jsonResource(doc: AnsweredResource): string {
  return `${JSON.stringify(publicResource(doc))}\n`;
}

/** One RFC 4180 record (CRLF, quoted where needed): id, name, status, created, metadata as JSON text. */
export function csvResource(doc: AnsweredResource): string {
  return csvLine([doc._id, doc.name, doc.status, String(doc.created), JSON.stringify(publicResource(doc)["metadata"])]);
}

/**
 * One CSV record. A cell beginning with `=`, `+`, `-`, `@`, a tab or a carriage return (or their full-width forms)
 * gets a leading `'` (OWASP's CSV injection guidance), so a spreadsheet shows it as text instead of running it as a
 * formula; a cell holding a line break is quoted, whichever break it is (RFC 4180), so a name with a lone `\n` stays
 * one cell.
 */
export function csvLine(fields: string[]): string {
  return stringify([fields], { record_delimiter: "\r\n", escape_formulas: true, quoted_match: /[\r\n]/ });
}
