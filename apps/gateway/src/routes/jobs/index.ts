import type { Operation } from "../operation.js";
import { cancelJob } from "./cancel.js";
import { createJob } from "./create.js";
import { listJobErrors } from "./errors.js";
import { listJobs } from "./list.js";
import { retrieveJob } from "./retrieve.js";

/** Every public operation on jobs. */
export const JOB_OPERATIONS: readonly Operation[] = [createJob, listJobs, retrieveJob, listJobErrors, cancelJob];
