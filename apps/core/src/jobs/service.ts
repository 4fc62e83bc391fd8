import { JobService, type ServiceImplementation } from "@rms/proto";
import { errors } from "../errors.js";
import { defineRpcs, found, rpc, type PresentedKeyCheck } from "../grpc/define-rpc.js";
import { limitOf, pageOf } from "../grpc/list-request.js";
import { itemErrorJson, jobMessage } from "./render.js";
import type { JobStore } from "./store.js";
import { jobStatusFilter, jobTypeFilter, typedParamsOf } from "./validation.js";

function createdBounds(range: { gt?: bigint; gte?: bigint; lt?: bigint; lte?: bigint } | undefined): { gt?: number; gte?: number; lt?: number; lte?: number } {
  const bounds: Record<string, number> = {};
  for (const key of ["gt", "gte", "lt", "lte"] as const) {
    const value = range?.[key];
    if (value !== undefined) bounds[key] = Number(value);
  }
  return bounds;
}

/** An item index as a cursor: absent, or a non-negative integer. */
function indexCursor(value: bigint | undefined, param: string): number | undefined {
  if (value === undefined) return undefined;
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER))
    throw errors.invalid("parameter_invalid", `Invalid ${param}: must be an item index (an integer from 0).`, param);
  return Number(value);
}

/**
 * The JobService RPCs (grpc/define-rpc.ts): the job-level rules (validation.ts), the presented key, then the
 * store, within the caller's deadline. Writes start once the key is confirmed; reads run alongside the check.
 */
export function jobService(store: JobStore, checkKey: PresentedKeyCheck): ServiceImplementation<typeof JobService> {
  return defineRpcs(JobService, checkKey, {
    createJob: rpc.write({
      // Under a key, the job's insert commits with the record of its answer (one commit).
      atomic: true,
      parse: (request) => typedParamsOf(request.params),
      write: (typed, { tenant, info, budget }) => store.create(tenant, typed, info, budget),
      reply: (created) => {
        if ("limitReached" in created) {
          throw errors.invalid(
            "limit_exceeded",
            `An account can have at most ${store.queuedPerAccount} unfinished (queued or running) jobs in each mode; wait for one to finish or cancel one.`,
          );
        }
        return { job: jobMessage(created.doc) };
      },
    }),

    // A dry run of createJob: the same parse (typedParamsOf), then reads only. Its count may examine up to
    // PREVIEW_EXAMINED_MAX documents, so it runs in `reply`, once the presented key is confirmed.
    previewJob: rpc.read({
      parse: (request) => typedParamsOf(request.params),
      load: async (typed) => typed,
      reply: async (typed, _input, { tenant, budget }) => ({ json: JSON.stringify(await store.preview(tenant, typed, budget)) }),
    }),

    getJob: rpc.read({
      load: ({ id }, { tenant, budget }) => store.get(tenant, id, budget),
      reply: (doc, { id }) => ({ job: jobMessage(found(doc, "job", id)) }),
    }),

    listJobs: rpc.read({
      parse: (request) => {
        const paging = pageOf(request, "job", "job");
        const status = jobStatusFilter(request.status);
        const type = jobTypeFilter(request.type);
        return { ...paging, ...(status ? { status } : {}), ...(type ? { type } : {}), created: createdBounds(request.created) };
      },
      load: (query, { tenant, budget }) => store.list(tenant, query, budget),
      reply: (page) => ({ jobs: page.items.map(jobMessage), hasMore: page.hasMore }),
    }),

    listJobErrors: rpc.read({
      parse: (request) => {
        const limit = limitOf(request.limit);
        const startingAfter = indexCursor(request.startingAfter, "starting_after");
        const endingBefore = indexCursor(request.endingBefore, "ending_before");
        if (startingAfter !== undefined && endingBefore !== undefined) {
          throw errors.invalid("parameter_invalid", "You may only specify one of starting_after and ending_before.", "ending_before");
        }
        return {
          jobId: request.jobId,
          page: { limit, ...(startingAfter !== undefined ? { startingAfter } : {}), ...(endingBefore !== undefined ? { endingBefore } : {}) },
        };
      },
      load: ({ jobId }, { tenant, budget }) => store.get(tenant, jobId, budget),
      async reply(doc, { jobId, page }, { budget }) {
        const job = found(doc, "job", jobId);
        const listed = await store.listErrors(job, page, budget);
        return { errorsJson: listed.items.map(itemErrorJson), hasMore: listed.hasMore, jobId: job._id };
      },
    }),

    cancelJob: rpc.write({
      write: ({ id }, { tenant, info, budget }) => store.cancel(tenant, id, info, budget),
      reply: (doc, { id }) => ({ job: jobMessage(found(doc, "job", id)) }),
    }),
  });
}
