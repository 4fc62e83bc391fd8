import { exampleId, FILE_PURPOSES, FILE_TYPES, idPattern, UPLOAD_STATUSES, type File, type FileUsage, type Upload, type UploadPart } from "@rms/proto";
import { constant, deletedOf, field, listOf, publicObject, schemaRef, type Page } from "../../schema/objects.js";
import { idSchema, LIST_LIMIT_MAX } from "../../schema/params.js";
import type { ParamSpec } from "../../engine/operation.js";

const UNIX_TIME = { type: "integer", minimum: 0, description: "Unix seconds." };
const SHA256 = { type: "string", pattern: "^[0-9a-f]{64}$", description: "The SHA-256 of the file's bytes, in hex." };

/** The public file object of CONTRACT.md section 11, every field always present. */
export const FileObject = publicObject<File>("File", {
  id: field(idSchema("file", "A file id: `file_` and an opaque suffix."), (f) => f.id),
  object: constant("file"),
  purpose: field({ type: "string", enum: [...FILE_PURPOSES], description: "`resources_import` files are uploaded; jobs make the others." }, (f) => f.purpose),
  filename: field({ type: ["string", "null"], maxLength: 255 }, (f) => f.filename ?? null),
  size: field({ type: "integer", minimum: 0, description: "Bytes." }, (f) => Number(f.size)),
  type: field({ type: "string", enum: [...FILE_TYPES] }, (f) => f.type),
  sha256: field(SHA256, (f) => f.sha256),
  created: field(UNIX_TIME, (f) => Number(f.created)),
  expires_at: field(
    {
      type: ["integer", "null"],
      minimum: 0,
      description: "Unix seconds after which the file is gone (7 days after its creation, or after its job finished); null while an unfinished job uses it.",
    },
    (f) => (f.expiresAt === undefined ? null : Number(f.expiresAt)),
  ),
  livemode: field({ type: "boolean" }, (f) => f.livemode),
  url: field(
    { type: "string", pattern: `^/v1/files/${idPattern("file")}/contents$`, description: "Where its bytes are downloaded." },
    (f) => `/v1/files/${f.id}/contents`,
  ),
});

/** A page of files with what the account stores in the mode (CONTRACT.md section 11). */
export interface FilePage extends Page<File> {
  readonly usage: FileUsage | undefined;
}

export const FileListObject = listOf<File, FilePage>(FileObject, "/v1/files", LIST_LIMIT_MAX, {
  used_bytes: field(
    {
      type: "integer",
      minimum: 0,
      description: "Bytes this account stores in this mode: its files (of every purpose, until they expire) and the parts of its pending uploads.",
    },
    (page) => Number(page.usage?.usedBytes ?? 0n),
  ),
  quota_bytes: field(
    {
      type: "integer",
      minimum: 0,
      description: "The most bytes it may store (FILES_QUOTA_BYTES, 10 GiB by default); past it an upload is 400 `limit_exceeded`.",
    },
    (page) => Number(page.usage?.quotaBytes ?? 0n),
  ),
});
export const DeletedFileObject = deletedOf(FileObject as never, "file", idSchema("file"));

/** An upload in parts (CONTRACT.md section 11). */
export const UploadObject = publicObject<Upload>(
  "Upload",
  {
    id: field(idSchema("upl", "An upload id: `upl_` and an opaque suffix."), (u) => u.id),
    object: constant("upload"),
    status: field({ type: "string", enum: [...UPLOAD_STATUSES], description: "`expired` once its hour passed without completion." }, (u) => u.status),
    bytes: field({ type: "integer", minimum: 0, maximum: 8 * 1024 ** 3, description: "The file's size, as declared at creation." }, (u) => Number(u.bytes)),
    filename: field({ type: "string", maxLength: 255 }, (u) => u.filename),
    purpose: field({ type: "string", enum: ["resources_import"] }, (u) => u.purpose),
    type: field({ type: "string", enum: [...FILE_TYPES] }, (u) => u.type),
    created: field(UNIX_TIME, (u) => Number(u.created)),
    expires_at: field({ ...UNIX_TIME, description: "Unix seconds: an upload not completed by then expires and its parts are reclaimed." }, (u) =>
      Number(u.expiresAt),
    ),
    file: field({ oneOf: [schemaRef("File"), { type: "null" }], description: "The file, once completed." }, (u) => (u.file ? FileObject.render(u.file) : null)),
  },
  [FileObject as never],
);

/** One part of an upload. */
export const UploadPartObject = publicObject<UploadPart>("UploadPart", {
  id: field(idSchema("part", "A part id: `part_` and an opaque suffix."), (p) => p.id),
  object: constant("upload.part"),
  upload: field(idSchema("upl"), (p) => p.uploadId),
  size: field({ type: "integer", minimum: 0, maximum: 64 * 1024 * 1024 }, (p) => Number(p.size)),
  sha256: field(SHA256, (p) => p.sha256),
  created: field(UNIX_TIME, (p) => Number(p.created)),
});

/** The `:id` of `/v1/files/:id`. */
export const FILE_ID_PATH = { id: { example: exampleId("file"), schema: { type: "string", description: "The file id." } } } satisfies Record<string, ParamSpec>;
/** The `:id` of `/v1/uploads/:id`. */
export const UPLOAD_ID_PATH = { id: { example: exampleId("upl"), schema: { type: "string", description: "The upload id." } } } satisfies Record<
  string,
  ParamSpec
>;
