import type { Vocabulary } from "./vocabulary.js";

/** Jobs (CONTRACT.md section 6, in ../shared/docs/). */
export const JOBS_VOCABULARY = {
  domain: "jobs",
  idPrefixes: ["job"],
  eventTypes: ["job.succeeded", "job.failed", "job.canceled"],
  scopes: ["jobs:read", "jobs:write"],
  impliedScopes: { "jobs:write": ["jobs:read"] },
} as const satisfies Vocabulary;

/** A job's `type`, in the order the API lists them. */
export const JOB_TYPES = ["resources.bulk_update", "resources.bulk_delete", "resources.import", "resources.export"] as const;
export type JobType = (typeof JOB_TYPES)[number];

/** A job's `status`, in the order the API lists them. */
export const JOB_STATUSES = ["queued", "running", "succeeded", "failed", "canceled"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
