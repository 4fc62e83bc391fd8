import { createHash } from "node:crypto";
import { filenameForType, isDuplicateKeyError } from "@rms/proto";
import type { Filter } from "mongodb";
import { UNBOUNDED, type Budget } from "../budget.js";
import type { Tenant } from "../caller.js";
import { errors } from "../errors.js";
import { newId } from "../ids.js";
import { BlobTooLarge, type Sealed } from "../storage/byte-store.js";
import { madeBy140 } from "../storage/key-slot.js";
import { writeWithin } from "../storage/write.js";
import {
  PART_MAX_BYTES,
  UPLOAD_EXPIRY_MS,
  UPLOAD_MAX_PARTS,
  partContent,
  uploadFileId,
  type FileDocument,
  type FilePurpose,
  type FileType,
  type PartDocument,
  type UploadDocument,
} from "./model.js";
import type { FileStore } from "./store.js";

export { uploadFileId };

/** How long an upload's object stays readable after it expired unfinished (its status then `expired`). */
const EXPIRED_UPLOAD_SHOWN_MS = 24 * 60 * 60 * 1000;
/** How long a completion keeps its parts from expiring while it hashes them. */
const COMPLETING_MS = 60 * 60 * 1000;

export interface NewUpload {
  purpose: FilePurpose;
  filename: string;
  bytes: number;
  type: FileType;
}

/** The status an upload shows: a pending one past its time is `expired`. */
export function uploadStatus(upload: UploadDocument, nowMs = Date.now()): UploadDocument["status"] {
  return upload.status === "pending" && upload.expires * 1000 <= nowMs ? "expired" : upload.status;
}

/**
 * Uploads in parts (CONTRACT.md section 11, in ../shared/docs/; docs/files.md, "Uploads in parts"): each part is a
 * blob of its own, and the completed file is the list of its parts' blobs in the order given, so completing copies
 * no byte; it reads them once, for the file's sha256.
 */
export class UploadStore {
  constructor(private readonly files: FileStore) {}

  /**
   * A new pending upload. Exactly once under an Idempotency-Key is the key's record's (grpc/idempotent.ts): the insert
   * commits with the record of its answer in the call's transaction (`budget`). An upload a 1.4.0 core made under the
   * key is answered instead, or `conflict` for another request (storage/key-slot.ts).
   */
  async create(
    tenant: Tenant,
    upload: NewUpload,
    idempotencyKey: string | null,
    budget: Budget = UNBOUNDED,
    nowMs = Date.now(),
  ): Promise<UploadDocument | { conflict: true }> {
    const sameRequest = (first: UploadDocument) =>
      first.purpose === upload.purpose && first.filename === upload.filename && first.bytes === upload.bytes && first.type === upload.type;
    const earlier = await madeBy140(this.files.uploads, tenant, idempotencyKey, sameRequest, budget, nowMs);
    if (earlier) return earlier.sameRequest ? earlier.doc : { conflict: true };
    // An upload whose bytes cannot fit in the tenant's room is refused now, not at the part that passes it.
    await this.files.admit(tenant, upload.bytes, nowMs);
    const id = newId("upl", nowMs);
    const created = Math.floor(nowMs / 1000);
    const expires = Math.floor((nowMs + UPLOAD_EXPIRY_MS) / 1000);
    const doc: UploadDocument = {
      _id: id,
      account: tenant.account,
      livemode: tenant.livemode,
      ...upload,
      status: "pending",
      created,
      expires,
      file: null,
      expires_at: new Date(expires * 1000 + EXPIRED_UPLOAD_SHOWN_MS),
      idempotency: id,
    };
    await writeWithin(budget, (options) => this.files.uploads.insertOne(doc, options));
    return doc;
  }

  async get(tenant: Tenant, id: string, param = "id"): Promise<UploadDocument> {
    const upload = await this.files.uploads.findOne({ _id: id, account: tenant.account, livemode: tenant.livemode });
    if (upload === null) throw errors.notFound("upload", id, param);
    return upload;
  }

  private async pending(tenant: Tenant, id: string, nowMs: number): Promise<UploadDocument> {
    const upload = await this.get(tenant, id);
    const status = uploadStatus(upload, nowMs);
    if (status !== "pending") throw errors.conflict("state_conflict", `Upload ${id} is ${status}; parts can be added to a pending upload only.`);
    return upload;
  }

  /**
   * Stores one part (at most PART_MAX_BYTES, at most the upload's `bytes`, and within the tenant's quota, checked
   * before a byte is read): its bytes, then its document. Parts may come in any order and at once. A part is its
   * bytes: the same bytes sent again to the upload answer the part they made (its id, its `created`), so a resend
   * replaces it rather than adding to it. A part that would take the upload's distinct parts past its `bytes` is 400
   * `limit_exceeded`, and is not kept.
   */
  async addPart(tenant: Tenant, uploadId: string, source: AsyncIterable<Uint8Array>, declared?: number, nowMs = Date.now()): Promise<PartDocument> {
    const upload = await this.pending(tenant, uploadId, nowMs);
    const most = Math.min(PART_MAX_BYTES, upload.bytes);
    const tooLarge = () => errors.of("request_too_large", `A part is at most ${most} bytes (64 MiB, and no more than the upload's bytes).`);
    if (declared !== undefined && declared > most) throw tooLarge();
    const usage = await this.files.admit(tenant, declared, nowMs);
    const id = newId("part", nowMs);
    const room = usage.quota - usage.used;
    let sealed: Sealed;
    try {
      sealed = await this.files.writeBlob(id, source, { maxBytes: Math.min(most, room) });
    } catch (error) {
      if (error instanceof BlobTooLarge && room < most) throw this.files.pastQuota(usage);
      if (error instanceof BlobTooLarge) throw tooLarge();
      throw error;
    }
    const part: PartDocument = {
      _id: id,
      upload: uploadId,
      account: tenant.account,
      livemode: tenant.livemode,
      size: sealed.size,
      sha256: sealed.sha256,
      created: Math.floor(nowMs / 1000),
      expires_at: new Date(upload.expires * 1000),
      content: partContent(uploadId, sealed),
    };
    try {
      await this.files.parts.insertOne(part);
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
      // These bytes were received already: that part is the answer, and this copy of them is reclaimed.
      const first = await this.files.parts.findOne({ content: part.content });
      if (first === null) throw errors.outcomeUnknown();
      await this.files.bytes.checkSoon([id], nowMs);
      return first;
    }
    // The upload's distinct parts must stay within its bytes. Counted after the insert, so that parts sent at once
    // cannot pass it together: each sees the others (both may then be refused; never both kept).
    const received = await this.receivedBytes(uploadId);
    if (received > upload.bytes) {
      await this.files.parts.deleteOne({ _id: id });
      await this.files.bytes.checkSoon([id], nowMs);
      throw errors.invalid(
        "limit_exceeded",
        `The parts of upload ${uploadId} would add up to ${received} bytes with this one of ${part.size}; the upload was created with ` +
          `bytes=${upload.bytes}. Send a part again to replace it (the same bytes are the same part), or create another upload.`,
      );
    }
    return part;
  }

  /** The bytes of the upload's parts (distinct by content: a resend is the part it repeats). */
  private async receivedBytes(uploadId: string): Promise<number> {
    const [sum] = await this.files.parts
      .aggregate<{ bytes: number }>([{ $match: { upload: uploadId } }, { $group: { _id: null, bytes: { $sum: "$size" } } }])
      .toArray();
    return sum?.bytes ?? 0;
  }

  /**
   * Completes a pending upload from its parts, in file order: their sizes must add up to its `bytes`
   * (`upload_incomplete`). The file is made of the parts' blobs (no copy); its sha256 is that of the whole, read
   * once. Repeating a completion with the same parts answers the same upload and file.
   */
  async complete(tenant: Tenant, id: string, partIds: readonly string[], nowMs = Date.now()): Promise<{ upload: UploadDocument; file: FileDocument }> {
    const upload = await this.get(tenant, id);
    const status = uploadStatus(upload, nowMs);
    const fileId = uploadFileId(id);
    if (status === "completed") {
      const file = await this.files.files.findOne({ _id: fileId });
      const same = file !== null && file.blobs.length === partIds.length && file.blobs.every((b, i) => b.id === partIds[i]);
      if (!same || file === null) throw errors.conflict("state_conflict", `Upload ${id} is already completed with other parts.`);
      return { upload, file };
    }
    if (status !== "pending") throw errors.conflict("state_conflict", `Upload ${id} is ${status}; only a pending upload can be completed.`);
    if (partIds.length === 0) throw errors.invalid("parameter_missing", "Missing required param: part_ids.", "part_ids");
    if (partIds.length > UPLOAD_MAX_PARTS)
      throw errors.invalid("parameter_invalid", `An upload is completed with at most ${UPLOAD_MAX_PARTS} parts.`, "part_ids");
    // A part may be named more than once: a part is its bytes, and a file may hold the same bytes at two places.
    // Keep the parts from expiring while they are read (a completion just before the hour).
    await this.files.parts.updateMany(
      { upload: id, _id: { $in: [...partIds] } },
      { $set: { expires_at: new Date(Math.max(upload.expires * 1000, nowMs + COMPLETING_MS)) } },
    );
    const parts = await this.files.parts.find({ upload: id, _id: { $in: [...partIds] } } as Filter<PartDocument>, { projection: { size: 1 } }).toArray();
    const sizes = new Map(parts.map((p) => [p._id, p.size]));
    const missing = partIds.find((p) => !sizes.has(p));
    // 400, not 404: the upload the path names exists; one of the ids in the body names none of its parts.
    if (missing !== undefined) throw errors.invalid("parameter_invalid", `No such part of upload ${id}: '${missing.slice(0, 64)}'.`, "part_ids");
    const blobs = partIds.map((p) => ({ id: p, size: sizes.get(p) ?? 0 }));
    const total = blobs.reduce((sum, b) => sum + b.size, 0);
    if (total !== upload.bytes) {
      throw errors.invalid("upload_incomplete", `The parts' sizes add up to ${total} bytes; the upload was created with bytes=${upload.bytes}.`, "part_ids");
    }
    const hash = createHash("sha256");
    for await (const piece of this.files.bytes.read(blobs)) hash.update(piece);
    const file = await this.files.announce(
      tenant,
      // Its name as every file's (an upload an earlier release created may lack its type's extension).
      { purpose: upload.purpose, type: upload.type, filename: filenameForType(upload.filename, upload.type), id: fileId },
      fileId,
      { size: total, sha256: hash.digest("hex") },
      blobs,
      nowMs,
    );
    const completed = await this.files.uploads.findOneAndUpdate(
      { _id: id, status: "pending" },
      { $set: { status: "completed", file: fileId, ...(file.expires_at ? { expires_at: file.expires_at } : {}) } },
      { returnDocument: "after" },
    );
    // The file owns the named parts' bytes now: the parts stop counting and expire, and the parts not named are
    // reclaimed at the next sweep. (A core that dies before this leaves the parts to their hour; the usage counts
    // the bytes once meanwhile, as the file's: store.ts `usage`.)
    const unnamed = await this.files.parts.find({ upload: id, _id: { $nin: [...partIds] } }, { projection: { _id: 1 } }).toArray();
    await this.files.parts.updateMany({ upload: id }, { $set: { expires_at: new Date(nowMs) } });
    await this.files.bytes.checkSoon(
      unnamed.map((p) => p._id),
      nowMs,
    );
    return { upload: completed ?? (await this.get(tenant, id)), file };
  }

  /** Cancels a pending upload: its parts expire now and their bytes go at the next sweep. */
  async cancel(tenant: Tenant, id: string, nowMs = Date.now()): Promise<UploadDocument> {
    await this.pending(tenant, id, nowMs);
    const canceled = await this.files.uploads.findOneAndUpdate({ _id: id, status: "pending" }, { $set: { status: "canceled" } }, { returnDocument: "after" });
    if (canceled === null) return this.cancel(tenant, id, nowMs);
    const parts = await this.files.parts.find({ upload: id }, { projection: { _id: 1 } }).toArray();
    await this.files.parts.updateMany({ upload: id }, { $set: { expires_at: new Date(nowMs) } });
    await this.files.bytes.checkSoon(
      parts.map((p) => p._id),
      nowMs,
    );
    return canceled;
  }
}
