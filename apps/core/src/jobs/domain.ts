import { JobService, file_rms_v1_jobs } from "@rms/proto";
import { implement, serviceEntry, type Domain } from "../domain.js";
import { JOBS_COLLECTION } from "./model.js";
import { jobService } from "./service.js";
import { JobStore } from "./store.js";

const both = ["admin", "gateway"] as const;

/** Jobs: bulk updates, bulk deletes and imports of resources, run by the workers (CONTRACT.md section 6, in ../shared/docs/). */
export const jobsDomain: Domain = {
  name: "jobs",
  files: [file_rms_v1_jobs],
  services: [
    serviceEntry(JobService, {
      createJob: both,
      getJob: both,
      listJobs: both,
      listJobErrors: both,
      cancelJob: both,
      previewJob: both,
    }),
  ],
  // The runner pushes job.* events into the job's outbox; cancel of a queued job does too.
  outboxes: [JOBS_COLLECTION],
  open({ db, checkKey, written }) {
    const store = new JobStore(db, written);
    return {
      ensureIndexes: () => store.ensureIndexes(),
      implementations: [implement(JobService, jobService(store, checkKey))],
    };
  },
};
