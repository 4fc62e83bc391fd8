import { defineOperation } from "../../engine/operation.js";
import { JOB_ID_PATH, JobObject } from "./objects.js";

/** POST /v1/jobs/:id/cancel: queued -> canceled at once; running -> cancel_requested_at; finished -> 409. */
export const cancelJob = defineOperation({
  method: "POST",
  path: "/v1/jobs/:id/cancel",
  summary: "Cancel a job",
  scope: "jobs:write",
  pathParameters: JOB_ID_PATH,
  success: {
    status: 200,
    description: "The job: canceled if it was queued; still running with `cancel_requested_at` set if it was running (it stops at its next checkpoint).",
    object: JobObject,
  },
  errors: ["resource_missing", "state_conflict"],
  service: "jobs",
  rpc: "cancelJob",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ job }) => job,
});
