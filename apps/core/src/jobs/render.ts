import type { MessageInitShape } from "@bufbuild/protobuf";
import type { JobSchema } from "@rms/proto";
import { publicForm } from "../public-form.js";
import type { Loaded } from "../storage/documents.js";
import type { JobDocument, JobItemError, JobSnapshot } from "./model.js";

/**
 * The one rendering of a job. `jobSnapshot` picks the public fields in the contract's order (CONTRACT.md
 * section 6), params and metadata in their stored form: what a `job.*` event records. The public object is
 * that snapshot in public form (`publicForm`: `object` after `id`, metadata pairs as maps), whether the
 * events API shows it or core answers it to the gateway (`jobMessage`), so an answer and an event agree by
 * construction. Every field is always present.
 */
export function jobSnapshot(doc: Loaded<JobDocument>): JobSnapshot {
  return {
    id: doc._id,
    type: doc.type,
    status: doc.status,
    params: doc.params,
    progress: { total: doc.progress.total, processed: doc.progress.processed, failed: doc.progress.failed, skipped: doc.progress.skipped },
    result: doc.result && { ...doc.result, errors: doc.result.errors.map(itemError) },
    // Stripe's names for a failure on an object (CONTRACT.md section 6): a top-level `error` in a 2xx body
    // reads as a failed request to Stripe's SDKs. Stored as `error` ({code, message}), shown under these names.
    failure_code: doc.error?.code ?? null,
    failure_message: doc.error?.message ?? null,
    attempts: doc.attempts,
    cancel_requested_at: doc.cancel_requested_at,
    livemode: doc.livemode,
    created: doc.created,
    started_at: doc.started_at,
    finished_at: doc.finished_at,
  };
}

/** A job as JobService answers it: its public object as JSON text. */
export function jobMessage(doc: Loaded<JobDocument>): MessageInitShape<typeof JobSchema> {
  return { id: doc._id, json: JSON.stringify(publicForm(jobSnapshot(doc), "job")) };
}

/** One failed item's public fields, in `result.errors` and in `GET /v1/jobs/{id}/errors` alike. */
export function itemError(error: JobItemError): JobItemError {
  return {
    index: error.index,
    ...(error.line !== undefined ? { line: error.line } : {}),
    id: error.id,
    code: error.code,
    param: error.param,
    message: error.message,
  };
}

/** One failed item as ListJobErrors answers it: JSON text. */
export function itemErrorJson(error: JobItemError): string {
  return JSON.stringify(itemError(error));
}
