import type { Tenant } from "../../caller.js";
import { importedResource, importedResourceId } from "../../resources/batch.js";
import type { ResourceDocument } from "../../resources/model.js";
import { importItemFields } from "../items.js";
import { fileOf, type JobItemError } from "../model.js";
import { readFileFrom } from "../files.js";
import { FILE_START, FileInvalidError, type Row, type RowFormat } from "../rows/model.js";
import { RpcError } from "@rms/proto";
import { type ReadOptions, readRows } from "../rows/read.js";
import { recordErrors } from "./errors-record.js";
import { nextStepRows, stepRows } from "./step-size.js";
import { newOutput, resultsFileResult, settleOutput, writePart } from "./output.js";
import { type Checkpoint, type Executor, type ImportPosition, JobFailure, type JobRun } from "./seam.js";
import { insertWithEvents } from "./with-events.js";

/** Rows per chunk: the most one step takes (one `insertMany`, one results part and one checkpoint each), and the rows that share one `chunk_ms`. */
export const IMPORT_CHUNK = 1_000;
/** Rows the scan counts per step (one checkpoint each): reading only, so far more than a chunk. */
export const SCAN_ROWS = 100_000;
/** A scan step also ends after this long, at a row boundary: it must finish between two deaths of its worker too. */
export const SCAN_STEP_MS = 1_000;
/** Lines an import can number: an imported resource's id holds its line in 5 base62 characters. */
export const IMPORT_LINES_MAX = 62 ** 5 - 1;

const NO_REQUEST = { requestId: null, idempotencyKey: null };

/**
 * `resources.import` (CONTRACT.md section 11): every import reads a `resources_import` file (an inline import's
 * items were stored as one at create). Two phases, each checkpointed by position in the file:
 * 1. The scan reads the whole file once without writing anything: a file that cannot be read as its type (not
 *    UTF-8, a CSV header without `name`, a broken quote) fails the job with `file_invalid` before any resource
 *    exists, and the row count becomes `progress.total`.
 * 2. The rows, a chunk of IMPORT_CHUNK at a time from the position after the last row done: each row validated by
 *    the resource rules (a failing row is recorded and counted, the rest go on), the valid ones inserted with one
 *    `insertMany` in one transaction with their `resource.created` events (with-events.ts: no outbox), each with an
 *    id derived from the job id and the row's line (a chunk redone after a takeover inserts nothing twice: the
 *    transaction reads which are stored already, committed with their events), and the chunk's results lines
 *    written as part `n` of the results file
 *    (a redo writes the same part again). The checkpoint then moves the position, the part count and the counts
 *    together in one write, so a takeover neither repeats nor skips a row or a results line.
 */
export function importExecutor(chunk = IMPORT_CHUNK, scanRows = SCAN_ROWS): Executor {
  return {
    async step(run, state) {
      const tenant: Tenant = { account: run.job.account, livemode: run.job.livemode };
      const file = fileOf(run.job.params);
      const position = state.import ?? (await startPosition(run, tenant, file));
      if (position.phase === "scan") return { ...state, import: await scan(run, tenant, file, position, scanRows) };
      return rowsChunk(run, tenant, file, state, position, chunk);
    },
    async finish(run, state, status) {
      const tenant: Tenant = { account: run.job.account, livemode: run.job.livemode };
      const result = await settleOutput(run, state, status === "failed" && state.next === 0 ? "discard" : "finish");
      await run.files.release(tenant, fileOf(run.job.params), run.job._id);
      return resultsFileResult(result);
    },
  };
}

/** The first position: the file's format from storage (a file gone since the create fails the job). */
async function startPosition(run: JobRun, tenant: Tenant, file: string): Promise<ImportPosition> {
  let found: { type: RowFormat };
  try {
    found = await run.files.importFile(tenant, file);
  } catch (error) {
    if (error instanceof RpcError && error.code === "resource_missing")
      throw new JobFailure("file_invalid", `The import's file ${file} cannot be read: it was deleted or has expired.`);
    throw error;
  }
  return { phase: "scan", format: found.type, cursor: FILE_START, columns: null, rows_from: null, total: 0 };
}

/** Rows of the file from `position`, a file that cannot be read as its type failing the job. */
async function* rowsFrom(run: JobRun, tenant: Tenant, file: string, position: ImportPosition, options: ReadOptions = {}) {
  try {
    yield* readRows(readFileFrom(run.files, tenant, file, position.cursor.offset), position.format, position.cursor, position.columns, options);
  } catch (error) {
    if (error instanceof FileInvalidError) throw new JobFailure("file_invalid", error.message);
    throw error;
  }
}

/** One step of the scan: up to `rows` rows counted from where the last step stopped; at the file's end, the rows phase. */
async function scan(run: JobRun, tenant: Tenant, file: string, position: ImportPosition, rows: number): Promise<ImportPosition> {
  let next = { ...position };
  let counted = 0;
  const until = Date.now() + SCAN_STEP_MS;
  // Counted only: the rows phase reads each row as an item.
  for await (const event of rowsFrom(run, tenant, file, position, { items: false })) {
    if (event.kind === "header") {
      next = { ...next, columns: event.columns, rows_from: event.end, cursor: event.end };
      continue;
    }
    if (event.line > IMPORT_LINES_MAX) throw new JobFailure("file_invalid", `The file has more than ${IMPORT_LINES_MAX} lines.`);
    next = { ...next, cursor: event.end, total: next.total + 1 };
    if (++counted >= rows || Date.now() >= until) return next;
  }
  // The end of the file: the rows start after the header (CSV) or at the start.
  return { ...next, phase: "rows", cursor: next.rows_from ?? FILE_START };
}

/**
 * One step of rows: created, recorded and written as one results part, then the checkpoint that moves past them.
 * The step takes `stepRows` rows (fewer after attempts without progress), never past `chunk_end`: every row before
 * it takes the chunk's `chunk_ms`, whichever step and worker creates it.
 */
async function rowsChunk(run: JobRun, tenant: Tenant, file: string, state: Checkpoint, position: ImportPosition, chunk: number): Promise<Checkpoint | null> {
  const started = Date.now();
  const chunkEnd = state.chunk_end ?? state.next + chunk;
  const size = stepRows(state.step_rows, chunk, run.stalled?.() ?? 0);
  const take = Math.min(size, chunkEnd - state.next);
  const rows: Row[] = [];
  for await (const event of rowsFrom(run, tenant, file, position)) {
    if (event.kind !== "row") continue;
    rows.push(event);
    if (rows.length >= take) break;
  }
  if (rows.length === 0) return null;
  const docs: ResourceDocument[] = [];
  const inserted: number[] = [];
  const outcomes: ({ id: string } | Omit<JobItemError, "index" | "line" | "id">)[] = [];
  rows.forEach((row, i) => {
    const check = row.item ? importItemFields(row.item) : { ok: false as const, error: row.error! };
    if (!check.ok) {
      outcomes.push(check.error);
      return;
    }
    const id = importedResourceId(run.job._id, row.line, state.chunk_ms);
    docs.push(importedResource(tenant, id, check.fields, state.chunk_ms, NO_REQUEST));
    inserted.push(i);
    outcomes.push({ id });
  });
  // The resources and their events in one transaction (with-events.ts): no outbox for a relay to copy and pull.
  const refused = await insertWithEvents(run, docs);
  for (const [position, message] of refused) outcomes[inserted[position]!] = { code: "write_failed", param: null, message };
  const failed: JobItemError[] = [];
  const lines: string[] = [];
  rows.forEach((row, i) => {
    const outcome = outcomes[i]!;
    if ("id" in outcome) lines.push(JSON.stringify({ line: row.line, id: outcome.id }));
    else {
      lines.push(JSON.stringify({ line: row.line, code: outcome.code, param: outcome.param, message: outcome.message }));
      failed.push({ index: state.next + i, line: row.line, id: null, ...outcome });
    }
  });
  const output = await writePart(run, state.output ?? newOutput(run, "job_results", "jsonl"), Buffer.from(`${lines.join("\n")}\n`));
  const errors = await recordErrors(run.db, run.job, state, failed);
  const created = docs.length - refused.size;
  const next = state.next + rows.length;
  // The chunk's time holds until its end; past it, the next chunk's time and end are fixed here, before any of its rows.
  const chunkDone = next >= chunkEnd;
  return {
    ...state,
    import: { ...position, cursor: rows.at(-1)!.end },
    output,
    next,
    chunk_ms: chunkDone ? Date.now() : state.chunk_ms,
    chunk_end: chunkDone ? next + chunk : chunkEnd,
    // Timed as if the step had taken its whole size (a step cut at the chunk's end or the file's is shorter).
    step_rows: nextStepRows(size, ((Date.now() - started) * size) / rows.length, chunk),
    done: state.done + created,
    failed: state.failed + failed.length,
    errors,
  };
}
