import { isDuplicateKeyError } from "@rms/proto";
import { MongoBulkWriteError, type Db } from "mongodb";
import type { Loaded } from "../../storage/documents.js";
import { JOB_ERRORS_COLLECTION, RESULT_ERRORS_INLINE_MAX, jobErrorId, type JobErrorDocument, type JobItemError } from "../model.js";
import type { Checkpoint, RunnerJob } from "./seam.js";

/**
 * Records a chunk's failed items in `job_errors` (by `<job>:<index>`, so a chunk redone after a
 * takeover records each once) and returns the checkpoint's inline list with them appended, capped.
 */
export async function recordErrors(db: Db, job: Loaded<RunnerJob>, state: Checkpoint, given: readonly JobItemError[]): Promise<JobItemError[]> {
  if (given.length === 0) return state.errors;
  const failed = given.map(bounded);
  const docs: JobErrorDocument[] = failed.map((e) => ({ _id: jobErrorId(job._id, e.index), job: job._id, account: job.account, livemode: job.livemode, ...e }));
  try {
    await db.collection<JobErrorDocument>(JOB_ERRORS_COLLECTION).insertMany(docs, { ordered: false });
  } catch (error) {
    if (!onlyDuplicates(error)) throw error;
  }
  return [...state.errors, ...failed].slice(0, RESULT_ERRORS_INLINE_MAX);
}

/** A batch insert whose only failures are duplicate keys: what an earlier attempt already wrote. */
export function onlyDuplicates(error: unknown): boolean {
  if (!(error instanceof MongoBulkWriteError)) return isDuplicateKeyError(error);
  const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
  return writeErrors.length > 0 && writeErrors.every((w) => w.code === 11000) && !error.writeConcernError;
}

/** Longest `message` and `param` an item error keeps: the job object and its `job.*` event hold 100 of them. */
export const ERROR_MESSAGE_MAX = 300;
export const ERROR_PARAM_MAX = 120;

/** An item error cut to the bounds, so no row's content can make a job object or event large. */
function bounded(error: JobItemError): JobItemError {
  const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
  return { ...error, message: cut(error.message, ERROR_MESSAGE_MAX), param: error.param === null ? null : cut(error.param, ERROR_PARAM_MAX) };
}
