import type { Vocabulary } from "./vocabulary.js";

/**
 * Files and uploads in parts (CONTRACT.md section 11, in ../shared/docs/): `file_` files, `upl_` uploads and
 * their `part_` parts. Files record no events.
 */
export const FILES_VOCABULARY = {
  domain: "files",
  idPrefixes: ["file", "upl", "part"],
  eventTypes: [],
  scopes: ["files:read", "files:write"],
  impliedScopes: { "files:write": ["files:read"] },
} as const satisfies Vocabulary;

/** A file's `purpose`: only `resources_import` is uploaded by clients; jobs make the others. */
export const FILE_PURPOSES = ["resources_import", "resources_export", "job_results"] as const;
export type FilePurpose = (typeof FILE_PURPOSES)[number];

/** A file's `type`. */
export const FILE_TYPES = ["jsonl", "csv"] as const;
export type FileType = (typeof FILE_TYPES)[number];

/** An upload's `status`. */
export const UPLOAD_STATUSES = ["pending", "completed", "canceled", "expired"] as const;
export type UploadStatus = (typeof UPLOAD_STATUSES)[number];

/** The purposes a client uploads (`POST /v1/files`, `POST /v1/uploads`); jobs make the others. */
export const UPLOADED_FILE_PURPOSES = ["resources_import"] as const satisfies readonly FilePurpose[];

/** The filename extensions of each type, lower case; the first is the one a name gets when it has none of them. */
export const FILE_TYPE_EXTENSIONS: Readonly<Record<FileType, readonly string[]>> = { jsonl: [".jsonl", ".ndjson"], csv: [".csv"] };

/** The longest filename a file keeps, in code points. */
export const FILENAME_MAX_CHARS = 255;

/**
 * A file's name as it is stored and served: the name given when it ends with an extension of its type (in any
 * case), else the name with the type's extension appended (`report.html` of type csv is `report.html.csv`), the
 * name cut at its end first when the whole would pass FILENAME_MAX_CHARS. A browser or a desktop saves and opens the file by
 * that last extension, so a file is never opened as what its name claims when its type says otherwise.
 */
export function filenameForType(name: string, type: FileType): string {
  const extensions = FILE_TYPE_EXTENSIONS[type];
  const lower = name.toLowerCase();
  if (extensions.some((extension) => lower.endsWith(extension))) return name;
  const extension = extensions[0]!;
  const chars = [...name];
  const room = FILENAME_MAX_CHARS - extension.length;
  return `${chars.length > room ? chars.slice(0, room).join("") : name}${extension}`;
}
