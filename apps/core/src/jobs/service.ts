import type { JobService, ServiceImplementation } from "@rms/proto";
import type { PresentedKeyCheck } from "../accounts/presented-key.js";
import { errors } from "../errors.js";
import { budgetOf } from "../grpc/budget.js";
import { requestInfo, tenantOf } from "../grpc/call-info.js";
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, pageOf } from "../grpc/list-request.js";
import { itemErrorJson, jobMessage } from "./render.js";
import type { JobStore } from "./store.js";
import { jobStatusFilter, jobTypeFilter, typedParamsOf } from "./validation.js";

/** Calls that present no key (operator tools holding the internal credential) are not checked. */
const NO_KEY_CHECK: PresentedKeyCheck = async () => undefined;

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
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) throw errors.invalid("parameter_invalid", `Invalid ${param}: must be an item index (an integer from 0).`, param);
  return Number(value);
}

/**
 * The JobService RPCs: the job-level rules (validation.ts), the presented key, then the store,
 * within the caller's deadline. Writes start once the key is confirmed; reads run alongside the check.
 */
export function jobService(store: JobStore, checkKey: PresentedKeyCheck = NO_KEY_CHECK): ServiceImplementation<typeof JobService> {
  return {
    async createJob(request, context) {
      const tenant = tenantOf(request.tenant);
      const budget = budgetOf(context);
      const typed = typedParamsOf(request.params);
      await checkKey(context, tenant, budget.db());
      const created = await store.create(tenant, typed, requestInfo(context), budget);
      if ("conflict" in created) {
        throw errors.of("idempotency_key_reused", "Keys for idempotent requests can only be used with the same parameters they were first used with.");
      }
      return { job: jobMessage(created.doc) };
    },

    async getJob(request, context) {
      const tenant = tenantOf(request.tenant);
      const budget = budgetOf(context);
      const [doc] = await Promise.all([store.get(tenant, request.id, budget), checkKey(context, tenant, budget.db())]);
      if (!doc) throw errors.notFound("job", request.id);
      return { job: jobMessage(doc) };
    },

    async listJobs(request, context) {
      const tenant = tenantOf(request.tenant);
      const paging = pageOf(request, "job", "job");
      const status = jobStatusFilter(request.status);
      const type = jobTypeFilter(request.type);
      const budget = budgetOf(context);
      const query = { ...paging, ...(status ? { status } : {}), ...(type ? { type } : {}), created: createdBounds(request.created) };
      const [page] = await Promise.all([store.list(tenant, query, budget), checkKey(context, tenant, budget.db())]);
      return { jobs: page.items.map(jobMessage), hasMore: page.hasMore };
    },

    async listJobErrors(request, context) {
      const tenant = tenantOf(request.tenant);
      const limit = request.limit === 0 ? LIST_LIMIT_DEFAULT : request.limit;
      if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT_MAX) {
        throw errors.invalid("limit_invalid", `Invalid limit: must be an integer from 1 to ${LIST_LIMIT_MAX}.`, "limit");
      }
      const startingAfter = indexCursor(request.startingAfter, "starting_after");
      const endingBefore = indexCursor(request.endingBefore, "ending_before");
      if (startingAfter !== undefined && endingBefore !== undefined) {
        throw errors.invalid("parameter_invalid", "You may only specify one of starting_after and ending_before.", "ending_before");
      }
      const budget = budgetOf(context);
      const [job] = await Promise.all([store.get(tenant, request.jobId, budget), checkKey(context, tenant, budget.db())]);
      if (!job) throw errors.notFound("job", request.jobId);
      const page = await store.listErrors(
        job,
        { limit, ...(startingAfter !== undefined ? { startingAfter } : {}), ...(endingBefore !== undefined ? { endingBefore } : {}) },
        budget,
      );
      return { errorsJson: page.items.map(itemErrorJson), hasMore: page.hasMore, jobId: job._id };
    },

    async cancelJob(request, context) {
      const tenant = tenantOf(request.tenant);
      const budget = budgetOf(context);
      await checkKey(context, tenant, budget.db());
      const doc = await store.cancel(tenant, request.id, requestInfo(context), budget);
      if (!doc) throw errors.notFound("job", request.id);
      return { job: jobMessage(doc) };
    },
  };
}
