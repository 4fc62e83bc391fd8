import type { Loaded } from "../storage/documents.js";
import type { JobDocument, JobSnapshot } from "./model.js";

/**
 * The job's public fields in the contract's order (CONTRACT.md section 6), `object` left out: the
 * snapshot a `job.*` event records (the events API names `object` from the event type and turns every
 * `metadata` list of `{k, v}` pairs back into a map), and the base of the API's rendering.
 * Every field is always present.
 */
export function jobSnapshot(doc: Loaded<JobDocument>): JobSnapshot {
  return {
    id: doc._id,
    type: doc.type,
    status: doc.status,
    params: doc.params,
    progress: { total: doc.progress.total, processed: doc.progress.processed, failed: doc.progress.failed, skipped: doc.progress.skipped },
    result: doc.result,
    error: doc.error,
    attempts: doc.attempts,
    cancel_requested_at: doc.cancel_requested_at,
    livemode: doc.livemode,
    created: doc.created,
    started_at: doc.started_at,
    finished_at: doc.finished_at,
  };
}
