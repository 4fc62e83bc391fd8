import { optionalInteger, optionalString } from "../../http/params.js";
import { CREATED_RANGE_PARAM, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, pageParams } from "../../schema/params.js";
import { createdParam } from "../events/filters.js";
import { defineOperation } from "../operation.js";
import { EXAMPLE_JOB_ID, JOB_ID_PATTERN, JOB_STATUS_NAMES, JobListObject } from "./objects.js";
import { JOB_TYPE_NAMES } from "./params.js";

/** GET /v1/jobs: one page, newest first, in the list envelope. */
export const listJobs = defineOperation({
  method: "GET",
  path: "/v1/jobs",
  summary: "List jobs",
  scope: "jobs:read",
  parameters: {
    ...pageParams(JOB_ID_PATTERN, "job", EXAMPLE_JOB_ID),
    status: { example: "running", schema: { type: "string", enum: [...JOB_STATUS_NAMES], description: "Only jobs in this status." } },
    type: { example: "resources.import", schema: { type: "string", enum: [...JOB_TYPE_NAMES], description: "Only jobs of this type." } },
    created: CREATED_RANGE_PARAM,
  },
  success: {
    status: 200,
    description: "One page of jobs, newest first (finished jobs are kept 30 days). A page holds fewer than `limit` jobs when their params are large; `has_more` says more follow.",
    object: JobListObject,
  },
  errors: ["limit_invalid", "parameter_invalid"],
  service: "jobs",
  rpc: "listJobs",
  request({ params, tenant }) {
    const limit = optionalInteger(params, "limit", { min: 1, max: LIST_LIMIT_MAX }, "limit_invalid") ?? LIST_LIMIT_DEFAULT;
    // Malformed cursors, both cursors, and unknown status or type are core's to refuse (one rule, one place).
    return {
      tenant,
      limit,
      startingAfter: optionalString(params, "starting_after") ?? "",
      endingBefore: optionalString(params, "ending_before") ?? "",
      status: optionalString(params, "status") ?? "",
      type: optionalString(params, "type") ?? "",
      created: createdParam(params),
    };
  },
  reply: (page) => ({ items: page.jobs, hasMore: page.hasMore }),
});
