import { isDuplicateKeyError } from "@rms/proto";
import { MongoBulkWriteError, type Db } from "mongodb";
import type { Loaded } from "../../storage/documents.js";
import { JOB_ERRORS_COLLECTION, RESULT_ERRORS_INLINE_MAX, jobErrorId, type JobErrorDocument, type JobItemError } from "../model.js";
import type { Checkpoint, RunnerJob } from "./seam.js";

/**
 * Records a chunk's failed items in `job_errors` (by `<job>:<index>`, so a chunk redone after a
 * takeover records each once) and returns the checkpoint's inline list with them appended, capped.
 */
export async function recordErrors(db: Db, job: Loaded<RunnerJob>, state: Checkpoint, failed: readonly JobItemError[]): Promise<JobItemError[]> {
  if (failed.length === 0) return state.errors;
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
