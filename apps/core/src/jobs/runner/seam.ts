import type { Binary, ClientSession, Db } from "mongodb";
import type { PublishInTransaction } from "../../storage/published-events.js";
import type { Loaded } from "../../storage/documents.js";
import type { JobFiles, OutputPurpose } from "../files.js";
import type { JobDocument, JobItemError, JobResult } from "../model.js";
import type { CsvColumns, RowCursor, RowFormat } from "../rows/model.js";

/**
 * The seam between the jobs API and whatever runs jobs (ARCHITECTURE rule 4, in ../shared/docs/;
 * docs/jobs.md "Replacing the engine"). The API records a job and its cancel request on the job
 * document; an engine turns that into execution. The database-backed engine needs no signal beyond the
 * document itself (workers poll the `jobs` collection and read `cancel_requested_at` at each
 * checkpoint), so both calls are no-ops there; an engine such as Temporal would start a workflow and
 * cancel it here. The executors see only `JobRun`, never the engine.
 */
export interface JobEngine {
  /** The job is durably queued (after the 201's write): make it runnable. */
  start(job: { id: string }): Promise<void>;
  /** `cancel_requested_at` is recorded on a running job: ask its execution to stop at its next checkpoint. */
  requestCancel(job: { id: string }): Promise<void>;
}

/** The database-backed engine: the queued document is the start, `cancel_requested_at` is the cancel. */
export const DATABASE_ENGINE: JobEngine = {
  async start() {},
  async requestCancel() {},
};

/**
 * Where a job stands: everything needed to go on after a takeover, kept on the job document
 * (`checkpoint`) and written by one epoch-guarded update per chunk.
 */
export interface Checkpoint {
  /** Items `[0, next)` are done. */
  next: number;
  /**
   * Unix ms that the next chunk's imported resources take for their ids and `created` (import only), fixed before the
   * chunk is written so a redo derives the same ids.
   */
  chunk_ms: number;
  /**
   * Import only: the item index where the rows that take `chunk_ms` end (absent: `next` plus the executor's chunk).
   * Steps may be shorter than a chunk (step-size.ts); a step never passes this end, and `chunk_ms` changes only once
   * `next` reaches it, so a redo after a takeover, however many rows it takes, derives the ids the dead worker did.
   */
  chunk_end?: number;
  /** Rows the next step of an import or export takes, before the halving for attempts without progress (step-size.ts). */
  step_rows?: number;
  /** Items created, updated or deleted (the type's count). */
  done: number;
  failed: number;
  skipped: number;
  /** The first errors (at most 100, in item order), for `result.errors`. */
  errors: JobItemError[];
  /** Bulk jobs: the filter's matches, copied into `job_items` pages before any item is touched. */
  snapshot?: { bound: string; pages: number; last: string | null; complete: boolean; total: number };
  /** An import: where it stands in its file (import.ts). */
  import?: ImportPosition;
  /** An export: the resources it walks (ids up to `bound`, the job's start) and the last id written (export.ts). */
  export?: { bound: string; last: string | null; complete: boolean };
  /** The file the job writes (an import's or bulk job's results, an export's rows) and how many parts of it are written. */
  output?: { file: string; purpose: OutputPurpose; format: RowFormat; parts: number };
}

/**
 * Where an import stands in its file: first a scan (`scan`: the whole file read once, checking that it can be
 * read as its type and counting its rows, before anything is created), then the rows (`rows`), each chunk from
 * `cursor`, the position after the last row done.
 */
export interface ImportPosition {
  phase: "scan" | "rows";
  format: RowFormat;
  cursor: RowCursor;
  /** A CSV file's header, once read. */
  columns: CsvColumns | null;
  /** Where the rows start (after a CSV header), once the scan has passed it. */
  rows_from: RowCursor | null;
  /** Rows counted so far by the scan; the file's row count once it is done. */
  total: number;
}

/** What a step's executor answers: the checkpoint after its chunk, or null when every item is done. */
export type StepResult = Checkpoint | null;

/** How a checkpoint went: go on, stop for a cancel request, or stop because the job is another worker's now (or the worker is stopping). */
export type CheckpointOutcome = "continue" | "cancel" | "lost";

/** One job's execution as an executor sees it (the database-backed implementation is runner/run.ts). */
export interface JobRun {
  readonly db: Db;
  /** File storage: the import's input, the job's output file. */
  readonly files: JobFiles;
  readonly job: Loaded<RunnerJob>;
  /** Attempts since the last checkpoint that made progress (takeovers and retries): a step shrinks with each (0 when absent). */
  stalled?(): number;
  /** Tells the relay which resources a chunk wrote (their events go out at once, not at the next sweep). */
  written(collection: string, ids: readonly string[]): void;
  /**
   * Runs `work` in one transaction of this run (transactions.ts): a chunk's changes and their events commit
   * together. Retried whole when the server says it may be, so `work` decides from what it reads inside.
   */
  inTransaction<T>(work: (session: ClientSession) => Promise<T>): Promise<T>;
  /** Fans out and inserts a chunk's events in its transaction (storage/published-events.ts); run the answer after the commit. */
  readonly publish: PublishInTransaction;
}

/** The executor of one job type: one chunk of work per step, idempotent per item. */
export interface Executor {
  step(run: JobRun, state: Checkpoint): Promise<StepResult>;
  /**
   * Just before the finishing write, whatever the outcome: settles the job's files (announce or drop the output,
   * end the hold on the input) and answers what `result` shows of them. Called again after a takeover that
   * finds the job unfinished, so it is idempotent.
   */
  finish?(run: JobRun, state: Checkpoint, status: "succeeded" | "failed" | "canceled"): Promise<Partial<JobResult>>;
}

/** A failure of the job itself, not of the service (a file that cannot be read as its type): the job fails with this code, not retried. */
export class JobFailure extends Error {
  override readonly name = "JobFailure";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The stored job with the runner's own fields (not part of the public object). */
export interface RunnerJob extends JobDocument {
  checkpoint?: Checkpoint;
  /** `<account>/<mode>/<n>` while running: the slot of JOBS_PER_ACCOUNT it holds (unique, sparse index). */
  run_slot?: string;
  /** Attempts since the last checkpoint that made progress: the job fails when they reach the limit. */
  stalled?: number;
  /** The session of the run's transactions (transactions.ts), ended by the run that takes the job over. */
  txn_session?: Binary;
}
