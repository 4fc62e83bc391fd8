import { JobService } from "@rms/proto";
import { JobFiles } from "../files/for-jobs.js";
import { OPERATOR_AND_GATEWAY as both, serviceDomain } from "../domain.js";
import { JOBS_COLLECTION } from "./model.js";
import { jobService } from "./service.js";
import { JobStore } from "./store.js";

/** Jobs: bulk updates, bulk deletes and imports of resources, run by the workers (CONTRACT.md section 6, in ../shared/docs/). */
export const jobsDomain = serviceDomain({
  name: "jobs",
  service: JobService,
  callers: { createJob: both, getJob: both, listJobs: both, listJobErrors: both, cancelJob: both, previewJob: both },
  // The runner pushes job.* events into the job's outbox; cancel of a queued job does too.
  outboxes: [JOBS_COLLECTION],
  open({ db, checkKey, written, settings }) {
    const store = new JobStore(db, written, settings.jobsQueuedPerAccount, new JobFiles(db, { streamLeaseMs: settings.filesWriteLeaseMs }));
    return { indexes: store, implementation: jobService(store, checkKey) };
  },
});
