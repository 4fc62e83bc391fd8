import { FILE_TYPES, filenameForType, type FileType } from "@rms/proto";
import { walkDocuments } from "../parts.js";
import type { MigrationStep } from "../step.js";

/** A stored name that does not end with one of its type's extensions (the names `filenameForType` changes). */
const WITHOUT_ITS_EXTENSION = {
  $or: [
    { type: "csv", filename: { $type: "string", $not: /\.csv$/i } },
    { type: "jsonl", filename: { $type: "string", $not: /\.(jsonl|ndjson)$/i } },
  ],
};

function converted(doc: { filename?: unknown; type?: unknown }) {
  if (typeof doc.filename !== "string" || !(FILE_TYPES as readonly unknown[]).includes(doc.type)) return null;
  const name = filenameForType(doc.filename, doc.type as FileType);
  return name === doc.filename ? null : { $set: { filename: name } };
}

/**
 * Files and uploads named before a name kept the extension its type implies (`report.html` of type csv) get it
 * (`report.html.csv`), as every upload is named since (docs/files.md, "Filename"): a browser or a desktop opens a
 * downloaded file by its last extension. By the same function the uploads use. An upload's name becomes its file's
 * at completion, so pending uploads are converted too.
 */
export const step: MigrationStep = {
  id: "0008-file-names-by-type",
  release: "1.4.1",
  kind: "expand",
  summary: "appends its type's extension to a file's or an upload's name that does not end with one",
  parts: ["files", "uploads"].map((collection) =>
    walkDocuments<{ _id: string; filename?: unknown; type?: unknown }>({
      collection,
      where: WITHOUT_ITS_EXTENSION,
      what: "names without their type's extension",
      read: ["filename", "type"],
      convert: converted,
    }),
  ),
};
