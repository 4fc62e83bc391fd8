import type { Db } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../grpc/budget.js";
import { idBoundAt, matchingFilter, type MarkedResource } from "../resources/batch.js";
import { RESOURCES_COLLECTION } from "../resources/store.js";
import { importItemFields } from "./items.js";
import { type JobFiles, readFileFrom } from "./files.js";
import { errors } from "../errors.js";
import { importFileOf } from "./import-file.js";
import { RESULT_ERRORS_INLINE_MAX, type ImportItem, type JobFilter, type JobItemError, type RequestedParams } from "./model.js";
import { FILE_START, FileInvalidError } from "./rows/model.js";
import { readRows } from "./rows/read.js";
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
  type: RequestedParams["type"];
  livemode: boolean;
  total: number;
  sample: string[];
  errors: JobItemError[];
}

export async function previewJob(db: Db, tenant: Tenant, typed: RequestedParams, files: JobFiles | null, budget: Budget = UNBOUNDED): Promise<JobPreview> {
  const base = { object: "job_preview" as const, type: typed.type, livemode: tenant.livemode };
  if (typed.type === "resources.import") {
    if ("items" in typed.params) {
      const items = typed.params.items;
      return { ...base, total: items.length, sample: [], errors: importErrors(items) };
    }
    if (!files) throw new Error("jobs: imports need file storage");
    return { ...base, ...(await fileImportPreview(files, tenant, typed.params.file)) };
  }
  const query = matchingFilter(tenant, (typed.params as { filter: JobFilter }).filter, null, idBoundAt(Date.now()));
  const resources = db.collection<MarkedResource>(RESOURCES_COLLECTION);
  const [total, sample] = await Promise.all([
    resources.countDocuments(query, { limit: PREVIEW_COUNT_MAX, ...budget.db() }),
    resources.find(query, { projection: { _id: 1 }, sort: { _id: 1 }, limit: PREVIEW_SAMPLE_SIZE, ...budget.db() }).toArray(),
  ]);
  return { ...base, total, sample: sample.map((doc) => doc._id), errors: [] };
}

/** Rows of a file a preview reads at most (and bytes): the preview of a file import reads the file's start only. */
export const PREVIEW_ROWS_MAX = 1_000;

/**
 * A file import's preview: the file is checked as the create checks it (the tenant's, purpose
 * `resources_import`), then its first PREVIEW_ROWS_MAX rows are read as the job reads them (a file that cannot be
 * read as its type answers 400 `parameter_invalid` on `params[file]` with the reason); `total` is the rows
 * read (the file's row count when it has no more, else a lower bound) and `errors` those that would fail.
 */
async function fileImportPreview(files: JobFiles, tenant: Tenant, file: string): Promise<{ total: number; sample: string[]; errors: JobItemError[] }> {
  const found = await importFileOf(files, tenant, file);
  const failed: JobItemError[] = [];
  let total = 0;
  const source = readFileFrom(files, tenant, file, 0);
  try {
    for await (const event of readRows(source, found.type, FILE_START)) {
      if (event.kind !== "row") continue;
      const check = event.item ? importItemFields(event.item) : { ok: false as const, error: event.error! };
      if (!check.ok && failed.length < RESULT_ERRORS_INLINE_MAX) failed.push(itemError({ index: total, line: event.line, id: null, ...check.error }));
      if (++total >= PREVIEW_ROWS_MAX) break;
    }
  } catch (error) {
    if (error instanceof FileInvalidError) throw errors.invalid("parameter_invalid", `Invalid params[file]: ${error.message}`, "params[file]");
    throw error;
  }
  return { total, sample: [], errors: failed };
}

/** The first 100 items that fail the import's per-item rules, as the runner records them (`id` null). */
function importErrors(items: readonly ImportItem[]): JobItemError[] {
  const failed: JobItemError[] = [];
  for (let index = 0; index < items.length && failed.length < RESULT_ERRORS_INLINE_MAX; index++) {
    const check = importItemFields(items[index]!);
    if (!check.ok) failed.push(itemError({ index, line: index + 1, id: null, ...check.error }));
  }
  return failed;
}
