import type { Db } from "mongodb";
import type { Tenant } from "../caller.js";
import { errors } from "../errors.js";
import { jobFileId, type FileDocument, type FilePurpose, type FileType, type FileView, fileView } from "./model.js";
import { FileStore, type FileStoreOptions } from "./store.js";

/**
 * The files domain's surface for the jobs runner and the jobs domain (docs/files.md, "For jobs"): the one module of
 * `files/` another domain may import. Everything takes the job's tenant; a file of another tenant is missing.
 */

/** An import file as a job reads it. */
export interface ImportFile {
  id: string;
  type: FileType;
  size: number;
  sha256: string;
}

/** A job's output file being written: chunks by index, then finish (or discard). */
export interface JobOutput {
  /** The file's id, derived from the job id and the purpose (the same on every worker). */
  readonly fileId: string;
  /**
   * Writes chunk `index` (0, 1, 2, ... in file order; at most 15 MiB each): durable when it resolves. Writing an
   * index again replaces it, so a worker that took over rewrites what the dead one may have written from its
   * last checkpoint on. Chunks past the last one finished are ignored by nothing: finish reads 0..k-1 and fails on
   * a gap, so write each index of the file exactly as its rows are (the checkpoint records the next index).
   * With `fence` (the job's lease epoch), an index a later epoch wrote is never replaced (FencedOut): a worker whose
   * lease was taken over cannot overwrite its successor's part, whose rows may be cut at another boundary.
   */
  writeChunk(index: number, bytes: Uint8Array, fence?: number): Promise<void>;
  /**
   * Seals the chunks 0..k-1 (streamed once: size and sha256) and writes the file's document; answers the file.
   * Idempotent: a repeat (after a crash, on another worker) answers the same file. The file expires
   * FILE_RETENTION_MS after `finishedAtMs` (the job's finish; default now).
   */
  finish(finishedAtMs?: number): Promise<FileView>;
  /** Removes the output (its chunks, and its document if finished): a canceled job leaves no file. Idempotent. */
  discard(): Promise<void>;
}

/** Chunks a job's read of its input asks for at a time (readFrom). */
const JOB_READ_BATCH = 1;

export class JobFiles {
  readonly store: FileStore;

  constructor(db: Db, options: FileStoreOptions = {}) {
    this.store = new FileStore(db, options);
  }

  /** The indexes the calls below use (core declares them at start through the files domain; tests call this). */
  ensureIndexes(): Promise<void> {
    return this.store.ensureIndexes();
  }

  /**
   * The import file `id` of the tenant: 404 `resource_missing` (naming `param`) when it does not exist (another
   * tenant's, another mode's, expired), 400 `parameter_invalid` when its purpose is not `resources_import`.
   */
  async importFile(tenant: Tenant, id: string, param = "params[file]"): Promise<ImportFile> {
    const file = await this.store.find(tenant, id);
    if (file === null) throw errors.notFound("file", id, param);
    if (file.purpose !== "resources_import")
      throw errors.invalid("parameter_invalid", `File ${id} has purpose '${file.purpose}'; an import reads a file with purpose 'resources_import'.`, param);
    return { id: file._id, type: file.type, size: file.size, sha256: file.sha256 };
  }

  /**
   * The file's bytes from `offset` to its end, streamed one chunk (1 MiB) at a time: an import step reads from its
   * position and stops after its rows (tens of KB), so a batch of several chunks was mostly read, decoded and
   * dropped at every step. 404 when the file is gone. A held file is never reclaimed, so a job that holds it reads
   * it whole.
   */
  async readFrom(tenant: Tenant, id: string, offset = 0): Promise<AsyncGenerator<Buffer>> {
    const file = await this.store.find(tenant, id);
    if (file === null) throw errors.notFound("file", id, "params[file]");
    return this.store.read(file, offset, undefined, JOB_READ_BATCH);
  }

  /** The job uses the file: it neither expires nor can be deleted (409) until released. Idempotent. 404 when missing. */
  async hold(tenant: Tenant, id: string, job: string, param = "params[file]"): Promise<void> {
    await this.store.hold(tenant, id, job, param);
  }

  /** The job finished with the file: it expires at its own retention (or at once if that has passed). Idempotent. */
  async release(tenant: Tenant, id: string, job: string, nowMs = Date.now()): Promise<void> {
    await this.store.release(tenant, id, job, nowMs);
  }

  /** The id of the file the job makes with that purpose (derived from the job id). */
  outputFileId(job: string, purpose: Exclude<FilePurpose, "resources_import">): string {
    return jobFileId(job, purpose);
  }

  /** A job's output file (`resources_export` or `job_results`), written by position; see JobOutput. */
  output(tenant: Tenant, job: string, purpose: Exclude<FilePurpose, "resources_import">, type: FileType, filename: string | null = null): JobOutput {
    const fileId = jobFileId(job, purpose);
    const store = this.store;
    return {
      fileId,
      writeChunk: (index, bytes, fence) => store.bytes.putChunk(fileId, index, bytes, Date.now(), fence),
      async finish(finishedAtMs = Date.now()) {
        const file = await store.finishOutput(tenant, { id: fileId, purpose, type, filename, job, retainFromMs: finishedAtMs });
        return fileView(file);
      },
      discard: () => store.discardOutput(tenant, fileId),
    };
  }

  /**
   * Stores bytes made in core as a `resources_import` file (an inline import's items, at the job's create): with
   * `job`, its id derives from the job id (a create repeated after a crash finds the same file) and the job holds it
   * from the start. The bytes may be a stream.
   */
  async createImportFile(
    tenant: Tenant,
    bytes: Uint8Array | AsyncIterable<Uint8Array>,
    type: FileType,
    options: { job?: string; filename?: string | null } = {},
  ): Promise<FileView> {
    const source = bytes instanceof Uint8Array ? once(bytes) : bytes;
    const job = options.job;
    if (job !== undefined) {
      const existing = await this.store.find(tenant, jobFileId(job, "items"));
      if (existing !== null) return fileView(existing);
    }
    const file: FileDocument = await this.store.createFromStream(
      tenant,
      {
        purpose: "resources_import",
        type,
        filename: options.filename ?? null,
        ...(job === undefined ? {} : { id: jobFileId(job, "items"), job, heldBy: [job] }),
      },
      source,
    );
    return fileView(file);
  }
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes;
}
