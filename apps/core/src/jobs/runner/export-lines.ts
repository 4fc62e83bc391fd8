import { stringify } from "csv-stringify/sync";
import type { LoadedResource } from "../../resources/store.js";

/** The CSV columns of an export, in order (CONTRACT.md section 11). */
export const EXPORT_CSV_COLUMNS = ["id", "name", "status", "created", "metadata"] as const;

/**
 * The public resource object of a stored resource: what `publicForm(stateOf(doc), "resource")` renders (`object`
 * after `id`, the metadata pairs as a map whose every key is its own, `__proto__` too), built directly because an
 * export renders every row it reads (the generic rendering was a tenth of the worker's CPU during an export).
 * export-lines.test.ts holds the two to the same output.
 */
export function resourceObject(doc: LoadedResource): Record<string, unknown> {
  // Object.fromEntries defines each key as an own property (`__proto__` included), as the null-prototype map does,
  // and keeps the object in V8's fast mode, which JSON.stringify walks about twice as fast.
  const metadata = Object.fromEntries(doc.metadata.map((pair) => [pair.k, pair.v]));
  return { id: doc._id, object: "resource", name: doc.name, status: doc.status, metadata, created: doc.created };
}

/** The public resource object, one JSON line. */
export function jsonResource(doc: LoadedResource): string {
  return `${JSON.stringify(resourceObject(doc))}\n`;
}

/** One RFC 4180 record (CRLF, quoted where needed): id, name, status, created, metadata as JSON text. */
export function csvResource(doc: LoadedResource): string {
  return csvLine([doc._id, doc.name, doc.status, String(doc.created), JSON.stringify(resourceObject(doc)["metadata"])]);
}

export function csvLine(fields: string[]): string {
  return stringify([fields], { record_delimiter: "\r\n" });
}
