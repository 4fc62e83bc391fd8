import { createHash } from "node:crypto";
import { FILENAME_MAX_CHARS, type FilePurpose, type FileType, type UploadStatus } from "@rms/proto";
import type { Tenant } from "../caller.js";
import { idAt, idTimeMs } from "../ids.js";
import type { BlobRef } from "../storage/byte-store.js";
import type { Expiring } from "../storage/expiry.js";

/**
 * The stored forms of files, uploads and parts (CONTRACT.md section 11, in ../shared/docs/; docs/files.md).
 * A file's bytes are blobs of the byte store (storage/byte-store.ts), in order: one blob for a streamed upload or
 * a job's output, the parts' blobs for an upload completed from parts (no byte is copied).
 */

export const FILES_COLLECTION = "files";
export const UPLOADS_COLLECTION = "uploads";
export const UPLOAD_PARTS_COLLECTION = "upload_parts";
/** The byte store's collections: `file_blobs` and `file_blob_chunks`. */
export const BLOB_PREFIX = "file_blob";

export type { FilePurpose, FileType, UploadStatus } from "@rms/proto";

/** An uploaded file expires this long after its creation; a job-made file this long after its job finished. */
export const FILE_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;
/** An upload not completed within this expires, its parts with it. */
export const UPLOAD_EXPIRY_MS = 60 * 60 * 1000;
/** The most bytes one upload in parts may declare. */
export const UPLOAD_MAX_BYTES = 8 * 1024 * 1024 * 1024;
/** The most bytes of one part. */
export const PART_MAX_BYTES = 64 * 1024 * 1024;
/** The most parts one completion may name. */
export const UPLOAD_MAX_PARTS = 10_000;
/** The longest filename kept. */
export const FILENAME_MAX = FILENAME_MAX_CHARS;

export interface FileDocument extends Expiring {
  _id: string;
  account: string;
  livemode: boolean;
  purpose: FilePurpose;
  filename: string | null;
  type: FileType;
  size: number;
  sha256: string;
  /** Unix seconds. */
  created: number;
  /** Its bytes, in order. */
  blobs: BlobRef[];
  /** When the file expires once no job holds it (`expires_at` is unset while one does). */
  retain_until: Date;
  /** The unfinished jobs that use it: while any does, it has no `expires_at` and DELETE is 409. */
  held_by: string[];
  /** The job that made it (`resources_export`, `job_results`, an inline import's items). */
  job?: string;
}

export interface UploadDocument extends Expiring {
  _id: string;
  account: string;
  livemode: boolean;
  purpose: FilePurpose;
  filename: string;
  type: FileType;
  bytes: number;
  status: UploadStatus;
  created: number;
  /** When a pending upload expires (Unix seconds, as shown). */
  expires: number;
  /** The completed file's id. */
  file: string | null;
  /** 1.4.0's key slot (storage/key-slot.ts): this release writes the upload's own id. */
  idempotency: string;
}

export interface PartDocument extends Expiring {
  /** The part's id, which is also its blob's id. */
  _id: string;
  upload: string;
  account: string;
  livemode: boolean;
  size: number;
  sha256: string;
  created: number;
  /**
   * `<upload>/<sha256>/<size>`, unique (`partContent`): the same bytes sent again to an upload are that part again,
   * never a second one. Absent on parts stored before it (they expire within the hour of their upload).
   */
  content?: string;
}

/** A part's content key: its upload and its bytes' sha256 and size. */
export function partContent(upload: string, sealed: { sha256: string; size: number }): string {
  return `${upload}/${sealed.sha256}/${sealed.size}`;
}

/** The id of the file an upload completes into: derived from the upload's id, so a repeated completion finds it. */
export function uploadFileId(upload: string): string {
  return idAt("file", idTimeMs(upload), createHash("sha256").update(`file:${upload}`).digest());
}

/** What one account stores in one mode (bytes of live files and of pending uploads' parts), and its quota. */
export interface FileUsage {
  used: number;
  quota: number;
}

/** A file as the API shows it (CONTRACT.md section 11). */
export interface FileView {
  id: string;
  purpose: FilePurpose;
  filename: string | null;
  size: number;
  type: FileType;
  sha256: string;
  created: number;
  expires_at: number | null;
  livemode: boolean;
}

export function fileView(
  doc: Pick<FileDocument, "_id" | "purpose" | "filename" | "size" | "type" | "sha256" | "created" | "livemode" | "expires_at">,
): FileView {
  return {
    id: doc._id,
    purpose: doc.purpose,
    filename: doc.filename,
    size: doc.size,
    type: doc.type,
    sha256: doc.sha256,
    created: doc.created,
    expires_at: doc.expires_at === undefined ? null : Math.floor(doc.expires_at.getTime() / 1000),
    livemode: doc.livemode,
  };
}

/** The filter of a file that exists for the tenant: not expired (an expired file is 404 before the TTL monitor takes it). */
export function liveFileFilter(tenant: Tenant, id: string, nowMs = Date.now()) {
  return { _id: id, account: tenant.account, livemode: tenant.livemode, $or: [{ expires_at: { $exists: false } }, { expires_at: { $gt: new Date(nowMs) } }] };
}

/**
 * The id of the file a job makes for `role` (`resources_export`, `job_results`, `items` for an inline import's
 * items): derived from the job id, so a finish repeated after a crash or a takeover finds the same file. Ordered
 * as if made when the job was.
 */
export function jobFileId(job: string, role: string): string {
  return idAt("file", idTimeMs(job), createHash("sha256").update(`file:${job}:${role}`).digest());
}
