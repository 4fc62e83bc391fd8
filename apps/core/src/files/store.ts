import { isDuplicateKeyError, type RpcError } from "@rms/proto";
import type { Collection, Db, Filter } from "mongodb";
import { UNBOUNDED, type Budget } from "../budget.js";
import type { Tenant } from "../caller.js";
import { errors } from "../errors.js";
import { newId } from "../ids.js";
import { pageFrom, keysetIdRange, type CreatedRange } from "../storage/keyset-list.js";
import { BlobIncomplete, BlobLost, ByteStore, type ByteStoreOptions, type Sealed } from "../storage/byte-store.js";
import { ensureExpiryIndex, expiryAt } from "../storage/expiry.js";
import { writeWithin } from "../storage/write.js";
import {
  BLOB_PREFIX,
  FILE_RETENTION_MS,
  FILES_COLLECTION,
  liveFileFilter,
  UPLOAD_PARTS_COLLECTION,
  UPLOADS_COLLECTION,
  type FileDocument,
  type FilePurpose,
  type FileType,
  type PartDocument,
  type UploadDocument,
  type FileUsage,
  uploadFileId,
} from "./model.js";
import { DEFAULT_FILES_QUOTA_BYTES } from "../settings.js";

/** How a file store is set: its streamed writes' lease, and the quota per account and mode. */
export interface FileStoreOptions extends ByteStoreOptions {
  /** FILES_QUOTA_BYTES (default 10 GiB). */
  readonly quotaBytes?: number;
}

/** What a new file is, besides its bytes. */
export interface NewFile {
  purpose: FilePurpose;
  type: FileType;
  filename: string | null;
  /** The file's id; a new one when absent (a job's files have ids derived from the job: model.ts `jobFileId`). */
  id?: string;
  /** The job that made it. */
  job?: string;
  /** Unfinished jobs that use it from the start (an inline import's items): it has no expiry until they release it. */
  heldBy?: string[];
  /** When its retention counts from (ms): its creation, or its job's finish. */
  retainFromMs?: number;
}

/** The projection of a file's document that reads answer (its blobs are the bytes' business only). */
const FILE_FIELDS = { blobs: 0 } as const;

/**
 * Files and their bytes (CONTRACT.md section 11, in ../shared/docs/; docs/files.md). A file's document is written
 * only after every byte is durable in the byte store; the document's TTL index does its retention, and the byte
 * store's sweep reclaims the bytes of every blob that no file (and no pending upload's part) names.
 */
export class FileStore {
  readonly files: Collection<FileDocument>;
  readonly uploads: Collection<UploadDocument>;
  readonly parts: Collection<PartDocument>;
  readonly bytes: ByteStore;

  /** Bytes of files and pending parts one account may store per mode (FILES_QUOTA_BYTES). */
  readonly quotaBytes: number;

  constructor(
    readonly db: Db,
    options: FileStoreOptions = {},
  ) {
    this.files = db.collection<FileDocument>(FILES_COLLECTION);
    this.uploads = db.collection<UploadDocument>(UPLOADS_COLLECTION);
    this.parts = db.collection<PartDocument>(UPLOAD_PARTS_COLLECTION);
    this.bytes = new ByteStore(db, BLOB_PREFIX, options);
    this.quotaBytes = options.quotaBytes ?? DEFAULT_FILES_QUOTA_BYTES;
  }

  /**
   * What the tenant stores: the sizes of its live files (held ones included, expired ones not) and of the parts of
   * its pending uploads, summed from the documents themselves at each call, each sum one range of an index with
   * the size in it (no document read). Nothing is counted apart, so nothing can drift: a crash between a file's
   * bytes and its document leaves bytes that no document names and that are not counted (the sweep reclaims
   * them), an expired file stops counting at its `expires_at` whether or not the TTL monitor took it yet. The one
   * fact kept in two places is an upload completed into a file while its parts still live (a core that died
   * between the file and the parts' expiry): the parts of an upload whose file exists are left out, so its bytes
   * count once.
   */
  async usage(tenant: Tenant, nowMs = Date.now()): Promise<FileUsage> {
    const now = new Date(nowMs);
    const tenantOf = { account: tenant.account, livemode: tenant.livemode };
    const [files, parts] = await Promise.all([
      this.files
        .aggregate<{ bytes: number }>([{ $match: { ...tenantOf, expires_at: { $not: { $lte: now } } } }, { $group: { _id: null, bytes: { $sum: "$size" } } }])
        .toArray(),
      this.parts
        .aggregate<{ _id: string; bytes: number }>([
          { $match: { ...tenantOf, expires_at: { $gt: now } } },
          { $group: { _id: "$upload", bytes: { $sum: "$size" } } },
        ])
        .toArray(),
    ]);
    let used = files[0]?.bytes ?? 0;
    if (parts.length > 0) {
      const completed = await this.files.find({ _id: { $in: parts.map((p) => uploadFileId(p._id)) } }, { projection: { _id: 1 } }).toArray();
      const announced = new Set(completed.map((f) => f._id));
      for (const upload of parts) if (!announced.has(uploadFileId(upload._id))) used += upload.bytes;
    }
    return { used, quota: this.quotaBytes };
  }

  /**
   * The tenant's usage, when an upload of `bytes` more (unknown: any) may start: 400 `limit_exceeded` when the
   * tenant is at its quota, or `bytes` would take it past. Asked before an upload reads its first byte.
   */
  async admit(tenant: Tenant, bytes?: number, nowMs = Date.now()): Promise<FileUsage> {
    const usage = await this.usage(tenant, nowMs);
    if (usage.used >= usage.quota || (bytes !== undefined && usage.used + bytes > usage.quota)) throw this.pastQuota(usage, bytes);
    return usage;
  }

  /** The 400 `limit_exceeded` of an upload that does not fit in the tenant's room (`bytes`: its size, when known). */
  pastQuota(usage: FileUsage, bytes?: number): RpcError {
    const asked = bytes === undefined ? "" : `; an upload of ${bytes} bytes does not fit`;
    return errors.invalid(
      "limit_exceeded",
      `This account stores ${usage.used} bytes of files and pending parts in this mode, of its quota of ${usage.quota} (FILES_QUOTA_BYTES)${asked}. ` +
        `Delete files, or cancel uploads, to make room.`,
    );
  }

  /**
   * Writes a stream as a new blob (ByteStore.write), answering the API's errors: a blob the sweep took from a
   * writer that stalled past its lease is 503 (nothing kept; the client sends it again).
   */
  async writeBlob(id: string, source: AsyncIterable<Uint8Array>, options: { maxBytes?: number } = {}): Promise<Sealed> {
    try {
      return await this.bytes.write(id, source, options);
    } catch (error) {
      if (error instanceof BlobLost)
        throw errors.of("service_unavailable", "The upload stalled past its writing lease and its bytes were reclaimed; nothing was kept. Send it again.");
      throw error;
    }
  }

  async ensureIndexes(): Promise<void> {
    await this.bytes.ensureIndexes();
    await this.files.createIndex({ account: 1, livemode: 1, _id: 1 }, { name: "tenant_id" });
    await this.files.createIndex({ account: 1, livemode: 1, purpose: 1, _id: 1 }, { name: "tenant_purpose_id" });
    await this.files.createIndex({ "blobs.id": 1 }, { name: "blobs" });
    // The usage's sum: the tenant's range, live files by their expiry, the size in the key (usage()).
    await this.files.createIndex({ account: 1, livemode: 1, expires_at: 1, size: 1 }, { name: "tenant_usage" });
    await ensureExpiryIndex(this.files);
    await this.uploads.createIndex({ idempotency: 1 }, { unique: true, name: "idempotency_unique" });
    await ensureExpiryIndex(this.uploads);
    await this.parts.createIndex({ upload: 1, _id: 1 }, { name: "upload_id" });
    await this.parts.createIndex({ content: 1 }, { unique: true, sparse: true, name: "content_unique" });
    await this.parts.createIndex({ account: 1, livemode: 1, expires_at: 1, upload: 1, size: 1 }, { name: "tenant_usage" });
    await ensureExpiryIndex(this.parts);
  }

  /**
   * Who owns each blob, for the byte store's sweep: a file (until it expires; with no end while a job holds it) or
   * a part of a pending upload (until the upload expires). An expired file owns nothing.
   */
  async owners(ids: readonly string[], nowMs = Date.now()): Promise<Map<string, Date | null>> {
    const owned = new Map<string, Date | null>();
    const later = (id: string, until: Date | null) => {
      const had = owned.get(id);
      if (!owned.has(id)) owned.set(id, until);
      else if (had !== null && (until === null || (had !== undefined && until > had))) owned.set(id, until);
    };
    const now = new Date(nowMs);
    const files = this.files.find(
      { "blobs.id": { $in: [...ids] }, $or: [{ expires_at: { $exists: false } }, { expires_at: { $gt: now } }] },
      { projection: { blobs: 1, expires_at: 1 } },
    );
    const asked = new Set(ids);
    for await (const file of files) for (const blob of file.blobs) if (asked.has(blob.id)) later(blob.id, file.expires_at ?? null);
    for await (const part of this.parts.find({ _id: { $in: [...ids] }, expires_at: { $gt: now } }, { projection: { expires_at: 1 } })) {
      later(part._id, part.expires_at ?? null);
    }
    return owned;
  }

  /** One pass of the bytes' sweep (storage/byte-store.ts). */
  sweep(nowMs = Date.now()): Promise<number> {
    return this.bytes.sweep((ids) => this.owners(ids, nowMs), nowMs);
  }

  /**
   * Stores a byte stream as a new file: the bytes first (hashed on the way, at most `maxBytes`), then its document,
   * written with `budget` (under an Idempotency-Key, in the transaction that records the answer: grpc/idempotent.ts).
   */
  async createFromStream(
    tenant: Tenant,
    file: NewFile,
    source: AsyncIterable<Uint8Array>,
    options: { maxBytes?: number; nowMs?: number; budget?: Budget } = {},
  ): Promise<FileDocument> {
    const nowMs = options.nowMs ?? Date.now();
    const id = file.id ?? newId("file", nowMs);
    const sealed = await this.writeBlob(id, source, options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes });
    return this.announce(tenant, file, id, sealed, [{ id, size: sealed.size }], nowMs, options.budget);
  }

  /**
   * Writes a file's document once its bytes are durable (`blobs`, sealed). A repeat of a deterministic id (a job's
   * output, an upload's completion) answers the first document when it is the same file.
   */
  async announce(
    tenant: Tenant,
    file: NewFile,
    id: string,
    sealed: Sealed,
    blobs: FileDocument["blobs"],
    nowMs = Date.now(),
    budget: Budget = UNBOUNDED,
  ): Promise<FileDocument> {
    const heldBy = file.heldBy ?? [];
    const retainUntil = expiryAt(file.retainFromMs ?? nowMs, FILE_RETENTION_MS);
    const doc: FileDocument = {
      _id: id,
      account: tenant.account,
      livemode: tenant.livemode,
      purpose: file.purpose,
      filename: file.filename,
      type: file.type,
      size: sealed.size,
      sha256: sealed.sha256,
      created: Math.floor(nowMs / 1000),
      blobs,
      retain_until: retainUntil,
      held_by: heldBy,
      ...(heldBy.length === 0 ? { expires_at: retainUntil } : {}),
      ...(file.job === undefined ? {} : { job: file.job }),
    };
    try {
      await writeWithin(budget, (options) => this.files.insertOne(doc, options));
      return doc;
    } catch (error) {
      if (!isDuplicateKeyError(error)) throw error;
    }
    const first = await this.files.findOne({ _id: id });
    if (first === null) throw errors.outcomeUnknown();
    const same =
      first.account === doc.account &&
      first.livemode === doc.livemode &&
      first.purpose === doc.purpose &&
      first.filename === doc.filename &&
      first.type === doc.type &&
      first.sha256 === doc.sha256;
    if (!same) throw errors.conflict("state_conflict", `File ${id} already exists with other contents.`);
    // A repeat's own copy of the bytes (a deterministic id announced twice) belongs to nothing: reclaimed at the next pass.
    const unused = blobs.map((b) => b.id).filter((b) => !first.blobs.some((f) => f.id === b));
    await this.bytes.checkSoon(unused, nowMs);
    return first;
  }

  /** The tenant's file, or null (unknown, another tenant's, expired). */
  async find(tenant: Tenant, id: string, nowMs = Date.now()): Promise<FileDocument | null> {
    return this.files.findOne(liveFileFilter(tenant, id, nowMs) as Filter<FileDocument>);
  }

  /** The tenant's file, or 404 `resource_missing` naming `param`. */
  async get(tenant: Tenant, id: string, param = "id", nowMs = Date.now()): Promise<FileDocument> {
    const file = await this.find(tenant, id, nowMs);
    if (file === null) throw errors.notFound("file", id, param);
    return file;
  }

  /** One keyset page of the tenant's files, newest first (expired files left out). */
  async list(
    tenant: Tenant,
    query: { limit: number; startingAfter?: string; endingBefore?: string; purpose?: FilePurpose; created?: CreatedRange },
    nowMs = Date.now(),
  ): Promise<{ items: FileDocument[]; hasMore: boolean }> {
    const filter: Record<string, unknown> = { account: tenant.account, livemode: tenant.livemode };
    if (query.purpose !== undefined) filter["purpose"] = query.purpose;
    const ids = keysetIdRange("file", { startingAfter: query.startingAfter, endingBefore: query.endingBefore }, query.created);
    if (ids !== undefined) filter["_id"] = ids;
    filter["$or"] = [{ expires_at: { $exists: false } }, { expires_at: { $gt: new Date(nowMs) } }];
    const backwards = query.endingBefore !== undefined;
    const found = await this.files
      .find(filter as Filter<FileDocument>, { sort: { _id: backwards ? 1 : -1 }, limit: query.limit + 1, projection: FILE_FIELDS })
      .toArray();
    return pageFrom(found, query.limit, backwards);
  }

  /** Deletes the tenant's file (404 if none; 409 `state_conflict` while an unfinished job uses it); its bytes go at the next sweep. */
  async delete(tenant: Tenant, id: string, nowMs = Date.now()): Promise<FileDocument> {
    const file = await this.get(tenant, id, "id", nowMs);
    if (file.held_by.length > 0)
      throw errors.conflict("state_conflict", `File ${id} is in use by an unfinished job (${file.held_by[0]}) and cannot be deleted.`);
    const deleted = await this.files.findOneAndDelete({ ...liveFileFilter(tenant, id, nowMs), "held_by.0": { $exists: false } } as Filter<FileDocument>);
    if (deleted === null) {
      if ((await this.find(tenant, id, nowMs)) !== null)
        throw errors.conflict("state_conflict", `File ${id} is in use by an unfinished job and cannot be deleted.`);
      throw errors.notFound("file", id);
    }
    await this.bytes.checkSoon(
      deleted.blobs.map((b) => b.id),
      nowMs,
    );
    return deleted;
  }

  /** Marks the file used by `job`: no expiry, no delete, until released. 404 (naming `param`) when it does not exist. */
  async hold(tenant: Tenant, id: string, job: string, param = "file", nowMs = Date.now()): Promise<FileDocument> {
    const held = await this.files.findOneAndUpdate(
      liveFileFilter(tenant, id, nowMs) as Filter<FileDocument>,
      { $addToSet: { held_by: job }, $unset: { expires_at: "" } },
      { returnDocument: "after" },
    );
    if (held === null) {
      // Already held by this job (and so without expiry): found by the filter above too; so this is a missing file.
      throw errors.notFound("file", id, param);
    }
    return held;
  }

  /**
   * The job is done with the file: once no job holds it, it expires at its own retention (`retain_until`), or at
   * once if that has passed. Repeating it changes nothing; a missing file is not an error.
   */
  async release(tenant: Tenant, id: string, job: string, nowMs = Date.now()): Promise<void> {
    const now = new Date(nowMs);
    await this.files.updateOne({ _id: id, account: tenant.account, livemode: tenant.livemode, held_by: job }, [
      { $set: { held_by: { $setDifference: ["$held_by", [job]] } } },
      { $set: { expires_at: { $cond: [{ $eq: [{ $size: "$held_by" }, 0] }, { $max: ["$retain_until", now] }, "$$REMOVE"] } } },
    ]);
  }

  /** Bytes `[start, end)` of a file as found (`get`), streamed, `batch` chunks at a time (the byte store's default when absent). */
  read(file: Pick<FileDocument, "blobs">, start = 0, end?: number, batch?: number): AsyncGenerator<Buffer> {
    return this.bytes.read(file.blobs, start, end, batch);
  }

  /** Seals a blob written by position and announces it as a file (a job's output); see `JobFiles.output`. */
  async finishOutput(tenant: Tenant, file: NewFile & { id: string }, nowMs = Date.now()): Promise<FileDocument> {
    const existing = await this.files.findOne({ _id: file.id });
    if (existing !== null) return existing;
    let sealed: Sealed;
    try {
      sealed = await this.bytes.seal(file.id);
    } catch (error) {
      if (error instanceof BlobIncomplete) throw new Error(`the output of ${file.job ?? file.id} lost chunks: ${error.message}`);
      throw error;
    }
    return this.announce(tenant, { ...file, retainFromMs: file.retainFromMs ?? nowMs }, file.id, sealed, [{ id: file.id, size: sealed.size }], nowMs);
  }

  /** Removes a job's output, announced or not: its document if any, then its bytes. */
  async discardOutput(tenant: Tenant, id: string): Promise<void> {
    await this.files.deleteOne({ _id: id, account: tenant.account, livemode: tenant.livemode });
    await this.bytes.discard(id);
  }
}
