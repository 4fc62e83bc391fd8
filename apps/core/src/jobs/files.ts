import type { Tenant } from "../caller.js";
import type { RowFormat } from "./rows/model.js";

/**
 * What the jobs domain needs of file storage (CONTRACT.md section 11), in the shape of the files domain's
 * surface for jobs (`files/for-jobs.ts`, the one module of `files/` jobs import; wired in jobs/domain.ts and
 * the worker's jobs task): jobs read import files from a byte position, hold the files an unfinished job uses,
 * and write their output files chunk by chunk at indexed positions (a chunk written twice, by a chunk redone
 * after a takeover, replaces itself), announced only by `finish`.
 */
export interface JobFiles {
  /** The tenant's file `id` as an import's input (throws 404 `resource_missing` or 400 `parameter_invalid` naming `param`). */
  importFile(tenant: Tenant, id: string, param?: string): Promise<{ id: string; type: RowFormat; size: number }>;
  /** A new `resources_import` file of `bytes` (an inline import's items as JSONL), its id derived from `job`, held by it; durable when it answers. */
  createImportFile(tenant: Tenant, bytes: Uint8Array, type: RowFormat, options: { job: string; filename?: string | null }): Promise<{ id: string }>;
  /** Marks `file` as used by `job` (never reclaimed nor deleted while held); idempotent. */
  hold(tenant: Tenant, file: string, job: string): Promise<void>;
  /** Ends `job`'s hold of `file`; idempotent. */
  release(tenant: Tenant, file: string, job: string): Promise<void>;
  /** The bytes of `file` from `offset` to its end, streamed. */
  readFrom(tenant: Tenant, file: string, offset: number): Promise<AsyncIterable<Uint8Array>>;
  /**
   * `job`'s output file of `purpose` (its id derived from the job and the purpose: a takeover finds the same file),
   * stored under `filename` (what a download saves it as).
   */
  output(tenant: Tenant, job: string, purpose: OutputPurpose, type: RowFormat, filename?: string | null): JobOutput;
}

/** A job's output file being written: chunks by index, then finish (or discard). */
export interface JobOutput {
  readonly fileId: string;
  /**
   * Writes chunk `index` (replacing one written before at that index); durable when it resolves. With `fence` (the
   * job's lease epoch), a chunk a later epoch wrote is never replaced: the write throws FencedOut.
   */
  writeChunk(index: number, bytes: Uint8Array, fence?: number): Promise<void>;
  /** Announces the file made of chunks `0..k-1` (size and sha256 computed); a repeat answers the same file. */
  finish(finishedAtMs?: number): Promise<{ id: string; size: number; sha256: string }>;
  /** Drops the output (its chunks, and its document if finished); idempotent. */
  discard(): Promise<void>;
}

export type OutputPurpose = "resources_export" | "job_results";

/** The bytes of `file` from `offset`, as one stream (the readers of jobs/rows/ take an iterable of buffers). */
export async function* readFileFrom(files: JobFiles, tenant: Tenant, file: string, offset: number): AsyncGenerator<Buffer> {
  for await (const piece of await files.readFrom(tenant, file, offset))
    yield Buffer.isBuffer(piece) ? piece : Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
}
