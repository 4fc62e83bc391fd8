import { defineOperation } from "../../engine/operation.js";
import { JOB_ID_PATH, JobObject } from "./objects.js";

/** GET /v1/jobs/:id */
export const retrieveJob = defineOperation({
  method: "GET",
  path: "/v1/jobs/:id",
  summary: "Retrieve a job",
  scope: "jobs:read",
  pathParameters: JOB_ID_PATH,
  success: { status: 200, description: "The job, with its progress.", object: JobObject },
  errors: ["resource_missing"],
  service: "jobs",
  rpc: "getJob",
  request: ({ path, tenant }) => ({ tenant, id: path["id"] ?? "" }),
  reply: ({ job }) => job,
});
