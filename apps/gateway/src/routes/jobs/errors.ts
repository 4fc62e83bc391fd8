import { optionalInteger } from "../../parsing/params.js";
import { INTEGER_MAX, LIMIT_PARAM, listLimit } from "../../schema/params.js";
import { defineOperation } from "../../engine/operation.js";
import { JOB_ID_PATH, JobItemErrorListObject } from "./objects.js";

const INDEX = { type: "integer", minimum: 0, maximum: INTEGER_MAX };

/** GET /v1/jobs/:id/errors: every failed item of a job, by index, in the list envelope. */
export const listJobErrors = defineOperation({
  method: "GET",
  path: "/v1/jobs/:id/errors",
  summary: "List a job's item errors",
  scope: "jobs:read",
  pathParameters: JOB_ID_PATH,
  parameters: {
    limit: LIMIT_PARAM,
    starting_after: {
      example: 99,
      notWith: "ending_before",
      schema: { ...INDEX, description: "Cursor: the errors of items after this index. Not together with `ending_before` (400)." },
    },
    // No example: exclusive with starting_after, whose example is shown (the examples together make one valid request).
    ending_before: {
      example: undefined,
      schema: { ...INDEX, description: "Cursor: the errors of items before this index. Not together with `starting_after` (400)." },
    },
  },
  success: { status: 200, description: "One page of the job's item errors, by item index (ascending).", object: JobItemErrorListObject },
  errors: ["resource_missing", "limit_invalid", "parameter_invalid"],
  service: "jobs",
  rpc: "listJobErrors",
  request({ params, path, tenant }) {
    const limit = listLimit(params);
    const startingAfter = optionalInteger(params, "starting_after", { min: 0, max: INTEGER_MAX });
    const endingBefore = optionalInteger(params, "ending_before", { min: 0, max: INTEGER_MAX });
    return {
      tenant,
      jobId: path["id"] ?? "",
      limit,
      ...(startingAfter !== undefined ? { startingAfter: BigInt(startingAfter) } : {}),
      ...(endingBefore !== undefined ? { endingBefore: BigInt(endingBefore) } : {}),
    };
  },
  reply: (page) => ({ jobId: page.jobId, items: page.errorsJson, hasMore: page.hasMore }),
});
