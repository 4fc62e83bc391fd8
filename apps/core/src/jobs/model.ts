import type { JOBS_VOCABULARY, JobStatus, JobType, ResourceStatusName } from "@rms/proto";
import type { MetadataPair } from "../metadata.js";
import type { ResourceFilter } from "../resources/filter.js";
import type { TenantDocument } from "../storage/documents.js";
import { expiryAt, type Expiring } from "../storage/expiry.js";
import type { KeySlot } from "../storage/key-slot.js";
import type { StoredTrace } from "@rms/telemetry";
import type { OutboxEvent } from "../storage/outbox.js";
import { QueueSignal } from "../storage/queue-signal.js";

/**
 * The stored forms of jobs (CONTRACT.md section 6, in ../shared/docs/) and of their per-item errors.
 * Written by the jobs domain (create, cancel) and by the jobs runner (claim, checkpoints, finish).
 *
 * Metadata anywhere in a job (filter equality pairs, the update's merge, import items) is stored as
 * `{k, v}` pairs, as resources store it: a user key such as `$where`, `a.b` or `__proto__` is data,
 * never a field name, path or operator (data rule 6 of docs/architecture.md).
 */

export const JOBS_COLLECTION = "jobs";
export const JOB_ERRORS_COLLECTION = "job_errors";

/**
 * The jobs queue's wake-up counter: a create (and a released job) adds one; idle workers look for work at
 * once when it moved instead of at their next full look (the claim of jobs/runner/claim.ts, once a second when idle).
 */
export const JOBS_QUEUE = new QueueSignal("jobs_queue", "queued");

/** The types and statuses of jobs, as the jobs vocabulary in @rms/proto names them. */
export { JOB_STATUSES, JOB_TYPES, type JobStatus, type JobType } from "@rms/proto";

/** Statuses a job never leaves: cancel answers 409 `state_conflict`, and the job expires 30 days after it finished. */
export const FINISHED_STATUSES: readonly JobStatus[] = ["succeeded", "failed", "canceled"];

export function isFinished(status: JobStatus): boolean {
  return FINISHED_STATUSES.includes(status);
}

/** Most items of one import (CONTRACT.md section 6). */
export const IMPORT_ITEMS_MAX = 10_000;
/** Errors kept inline in `result.errors`; all of them are in `job_errors`. */
export const RESULT_ERRORS_INLINE_MAX = 100;
/** Finished jobs (and their `job_errors`) expire this long after they finished. */
export const JOB_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * The `retain_until` of a job finished at `finishedAt` (Unix seconds, its `finished_at`), set by the write
 * that finishes it: the relay makes it the job's `expires_at` once the `job.*` event is out (storage/expiry.ts).
 */
export function jobRetainUntil(finishedAt: number): Date {
  return expiryAt(finishedAt * 1000, JOB_RETENTION_MS);
}

/** The `_id` range of a job's own documents in other collections (`<job id>:<n>`: its errors, its items pages). */
export function jobDocumentIds(job: string): { $gt: string; $lt: string } {
  // ":" is followed by ";" in byte order, and a job id holds neither.
  return { $gt: `${job}:`, $lt: `${job};` };
}

/**
 * Which resources a bulk job targets: the one resource filter of the list and search (CONTRACT.md
 * section 3, "The filter model"; resources/filter.ts, the resources domain's side of it), without `name`
 * (search only). Checked at create (up to 1,000 ids, up to 5 metadata keys, at least one condition) and
 * evaluated once, when the job starts: the matches then are the job's items, in id order.
 */
export type JobFilter = Omit<ResourceFilter, "name">;

/**
 * A bulk update's change, same rules as the resource Update: `metadata` pairs are merged (a pair
 * whose value is `""` removes its key), or `""` removes every key. At least one field is present.
 * Key and value rules (and the 50-key limit of the merged result) are checked when applied, per item.
 */
export interface JobUpdate {
  status?: ResourceStatusName;
  metadata?: MetadataPair[] | "";
}

/**
 * One import item as submitted, with its types already checked (a wrong JSON type is a 400 at
 * create). Its rules (name present, 1 to 200 code points, a known status, metadata keys and values,
 * at most 50 keys) are checked per item at run time with `importItemFields` (jobs/validation.ts): a
 * failing item is counted in `progress.failed` and recorded in `job_errors`; it does not stop the job.
 */
export interface ImportItem {
  name?: string;
  /** Any string; an unknown status fails the item at run time. */
  status?: string;
  metadata?: MetadataPair[];
}

export interface BulkUpdateParams {
  filter: JobFilter;
  update: JobUpdate;
}
export interface BulkDeleteParams {
  filter: JobFilter;
}
/** An import as stored: the `resources_import` file it reads (an inline import's items were made one at create). */
export interface ImportParams {
  file: string;
}
/** An inline import as requested: its items become a `resources_import` file at create (jobs/store.ts). */
export interface InlineImportParams {
  items: ImportItem[];
}
/** The formats an export writes. */
export const EXPORT_FORMATS = ["jsonl", "csv"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
/** An export: which resources (every condition optional) and the file's format. */
export interface ExportParams {
  filter: JobFilter;
  format: ExportFormat;
}

/** A job's params as stored (the one stored shape): validated at create (jobs/validation.ts), read by the runner, rendered by jobs/render.ts. */
export type StoredParams = BulkUpdateParams | BulkDeleteParams | ImportParams | ExportParams;

/** A job's type with its params' stored form. */
export type TypedParams =
  | { type: "resources.bulk_update"; params: BulkUpdateParams }
  | { type: "resources.bulk_delete"; params: BulkDeleteParams }
  | { type: "resources.import"; params: ImportParams }
  | { type: "resources.export"; params: ExportParams };

/** A create's type and params as requested: an import's params may be inline items, stored as a file by the create. */
export type RequestedParams = TypedParams | { type: "resources.import"; params: InlineImportParams };

// The runner's reads of stored params, by what they hold (create stores a type with its own params, so a
// mismatch is a bug, thrown as one).
export function filterOf(params: StoredParams): JobFilter {
  if (!("filter" in params)) throw new Error("an import has no filter");
  return params.filter;
}
export function updateOf(params: StoredParams): JobUpdate {
  if (!("update" in params)) throw new Error("only a bulk update has an update");
  return params.update;
}
export function fileOf(params: StoredParams): string {
  if (!("file" in params)) throw new Error("only an import reads a file");
  return params.file;
}
export function exportOf(params: StoredParams): ExportParams {
  if (!("format" in params)) throw new Error("only an export has a format");
  return params as ExportParams;
}

export interface JobProgress {
  /** Items of the job: the import's item count from create; for bulk jobs null until the runner evaluates the filter at start. */
  total: number | null;
  processed: number;
  failed: number;
  skipped: number;
}

/** One failed item, as `result.errors` and `GET /v1/jobs/{id}/errors` show it. */
export interface JobItemError {
  /** The item's place: an import's row (0-based, in file order; an inline item's index), a bulk job's match in id order. */
  index: number;
  /** An import's row: its line in the file (1-based; an inline item's index + 1). */
  line?: number;
  /** The resource the item was about, when it has one (bulk jobs; an import item's derived id when known). */
  id: string | null;
  code: string;
  /** The item's field at fault (`name`, `status`, `metadata[k]`…), or null. */
  param: string | null;
  message: string;
}

/** The count `result` names after the type's effect. */
export function resultCountName(type: JobType): "created" | "updated" | "deleted" | "exported" {
  return RESULT_COUNT_NAME[type];
}
const RESULT_COUNT_NAME = {
  "resources.import": "created",
  "resources.bulk_update": "updated",
  "resources.bulk_delete": "deleted",
  "resources.export": "exported",
} as const;

/**
 * `result` once finished (a job canceled while queued too, with a count of 0): the count named after the type's
 * effect, the first 100 errors, and the files it wrote (CONTRACT.md section 11): an import's, bulk update's or
 * bulk delete's `results_file` (one line per item), an export's `file`. A file id, never the rows: a result
 * stays a few hundred bytes plus its errors whatever the job.
 */
export interface JobResult {
  created?: number;
  updated?: number;
  deleted?: number;
  exported?: number;
  errors: JobItemError[];
  results_file?: string | null;
  file?: string | null;
}

/**
 * The job as `job.*` events snapshot it (the public object without `object`; params in their stored
 * form, whose metadata pairs the events API turns back into maps), made by `jobSnapshot` (jobs/render.ts).
 */
export type JobSnapshot = Record<string, unknown>;

/** `job.succeeded`, `job.failed`, `job.canceled`: pushed into the job's own outbox by the write that finishes it. */
export type JobEvent = OutboxEvent<(typeof JOBS_VOCABULARY.eventTypes)[number], JobSnapshot, never>;

/**
 * The stored job. `version` grows by one with every write that changes what the public object shows
 * (status, progress, result, error, attempts, cancel_requested_at, started_at, finished_at); an event
 * carries the version its write made as its `sequence`. `deleted` is never used: a finished job gets
 * `retain_until` (jobRetainUntil) and expires then, once its outbox is empty (storage/expiry.ts).
 */
export interface JobDocument extends TenantDocument<JobEvent>, KeySlot {
  _id: string;
  type: JobType;
  status: JobStatus;
  params: StoredParams;
  progress: JobProgress;
  result: JobResult | null;
  /** Why a failed job failed; the public object shows it as `failure_code` and `failure_message` (jobs/render.ts). */
  error: { code: string; message: string } | null;
  /** Transient failures retried so far (the runner counts them). */
  attempts: number;
  /** Unix seconds of the first cancel of a running job; a second cancel keeps it. */
  cancel_requested_at: number | null;
  /** Unix seconds. */
  created: number;
  started_at: number | null;
  finished_at: number | null;
  /** Lease (storage/lease.ts): the worker holding the job, until when (ms), and the epoch its writes filter on. */
  lease_owner: string | null;
  lease_until: number | null;
  epoch: number;
  /**
   * While unfinished: which of its tenant's JOBS_QUEUED_PER_ACCOUNT places it holds (`0..N-1`, unique with
   * account and mode: jobs/queue-limit.ts); taken by the create's insert, given back by the write that
   * finishes the job (the runner's finish, or the cancel of a queued job). Not part of the public object.
   */
  queue_slot?: number;
  /** The trace of the call that created it (tracing on only), continued by the worker's run; not part of the public object. */
  trace?: StoredTrace;
  /** Checkpoint fields of the runner (jobs/runner/) may follow; they are not part of the public object. */
}

/**
 * One failed item of a job. `_id` is `<job id>:<index>`, so recording it twice is a no-op. It gets the
 * job's `retain_until` as its `expires_at` just before the job's finishing write (jobs/runner/run.ts).
 */
export interface JobErrorDocument extends JobItemError, Expiring {
  _id: string;
  job: string;
  account: string;
  livemode: boolean;
}

export function jobErrorId(job: string, index: number): string {
  return `${job}:${index}`;
}
