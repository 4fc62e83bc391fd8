import { JOB_STATUSES, JOB_TYPES } from "@rms/proto";
import { optionalString } from "../../parsing/params.js";
import { CREATED_RANGE_PARAM, createdParam, pageParams, pageRequest } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { JobListObject } from "./objects.js";

/** GET /v1/jobs: one page, newest first, in the list envelope. */
export const listJobs = defineOperation({
  method: "GET",
  path: "/v1/jobs",
  summary: "List jobs",
  scope: "jobs:read",
  parameters: {
    ...pageParams("job", "job"),
    status: { example: "running", schema: { type: "string", enum: [...JOB_STATUSES], description: "Only jobs in this status." } },
    type: { example: "resources.import", schema: { type: "string", enum: [...JOB_TYPES], description: "Only jobs of this type." } },
    created: CREATED_RANGE_PARAM,
  },
  success: {
    status: 200,
    description:
      "One page of jobs, newest first (finished jobs are kept 30 days). A page holds fewer than `limit` jobs when their params are large; `has_more` " +
      "says more follow.",
    object: JobListObject,
  },
  errors: ["limit_invalid", "parameter_invalid"],
  service: "jobs",
  rpc: "listJobs",
  request({ params, tenant }) {
    // Unknown status or type is core's to refuse (one rule, one place).
    return {
      tenant,
      ...pageRequest(params),
      status: optionalString(params, "status") ?? "",
      type: optionalString(params, "type") ?? "",
      created: createdParam(params),
    };
  },
  reply: (page) => ({ items: page.jobs, hasMore: page.hasMore }),
});
