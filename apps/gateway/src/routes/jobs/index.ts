import type { EventPayload, Operation } from "../../engine/operation.js";
import { JobObject } from "./objects.js";
import { cancelJob } from "./cancel.js";
import { createJob } from "./create.js";
import { listJobErrors } from "./errors.js";
import { listJobs } from "./list.js";
import { retrieveJob } from "./retrieve.js";

/** Every public operation on jobs. */
export const JOB_OPERATIONS: readonly Operation[] = [createJob, listJobs, retrieveJob, listJobErrors, cancelJob];

/** The events of a job's end, as webhooks deliver them (`data.object` is the job as it finished). */
export const JOB_EVENTS: readonly EventPayload[] = [
  { type: "job.succeeded", summary: "A job finished its work (items that failed alone are in `progress.failed` and its errors).", object: JobObject },
  { type: "job.failed", summary: "A job stopped on an error of its own (`failure_code`).", object: JobObject },
  { type: "job.canceled", summary: "A job was canceled; what it committed before stays.", object: JobObject },
];
