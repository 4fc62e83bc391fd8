import type { Db } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { idBoundAt, matchingFilter, type MarkedResource } from "../resources/batch.js";
import { RESOURCES_COLLECTION } from "../resources/store.js";
import { importItemFields } from "./items.js";
import { filterOf, itemsOf, RESULT_ERRORS_INLINE_MAX, type JobItemError, type TypedParams } from "./model.js";
import { itemError } from "./render.js";

/**
 * A job's dry run (CONTRACT.md section 6, "Dry run"; the API's `validate_only=true`): the params were
 * checked by the create's own rules (`typedParamsOf`); this says what the job would work on now, and
 * stores, queues and emits nothing.
 *
 * - A bulk job: how many resources its filter matches now (`total`) and the first 10 of them in id order
 *   (`sample`), by the query the runner evaluates the filter with when the job starts (`matchingFilter`,
 *   bounded by the present instead of the job's start). The count stops at `PREVIEW_COUNT_MAX`: a total of
 *   1,000,000 means "at least that many". Its cost is the runner's own snapshot walk, cut at that many
 *   matches: the filter's index range, each document in it fetched once (docs/jobs.md, "Previews").
 * - An import: the item count, and the items that would fail by the per-item rules the runner applies
 *   (`importItemFields`), the first 100, each as `result.errors` shows it. No database command.
 */

/** Most matches a bulk preview counts. */
export const PREVIEW_COUNT_MAX = 1_000_000;
/** Matches a bulk preview lists, the first in id order. */
export const PREVIEW_SAMPLE_SIZE = 10;

/** The public `job_preview` object, fields in contract order. */
export interface JobPreview {
  object: "job_preview";
  type: TypedParams["type"];
  livemode: boolean;
  total: number;
  sample: string[];
  errors: JobItemError[];
}

export async function previewJob(db: Db, tenant: Tenant, typed: TypedParams, budget: Budget = UNBOUNDED): Promise<JobPreview> {
  const base = { object: "job_preview" as const, type: typed.type, livemode: tenant.livemode };
  if (typed.type === "resources.import") {
    const items = itemsOf(typed.params);
    return { ...base, total: items.length, sample: [], errors: importErrors(items) };
  }
  const query = matchingFilter(tenant, filterOf(typed.params), null, idBoundAt(Date.now()));
  const resources = db.collection<MarkedResource>(RESOURCES_COLLECTION);
  const [total, sample] = await Promise.all([
    resources.countDocuments(query, { limit: PREVIEW_COUNT_MAX, ...budget.db() }),
    resources.find(query, { projection: { _id: 1 }, sort: { _id: 1 }, limit: PREVIEW_SAMPLE_SIZE, ...budget.db() }).toArray(),
  ]);
  return { ...base, total, sample: sample.map((doc) => doc._id), errors: [] };
}

/** The first 100 items that fail the import's per-item rules, as the runner records them (`id` null). */
function importErrors(items: ReturnType<typeof itemsOf>): JobItemError[] {
  const errors: JobItemError[] = [];
  for (let index = 0; index < items.length && errors.length < RESULT_ERRORS_INLINE_MAX; index++) {
    const check = importItemFields(items[index]!);
    if (!check.ok) errors.push(itemError({ index, id: null, ...check.error }));
  }
  return errors;
}
