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
