import type { Db, Document } from "mongodb";
import type { Tenant } from "../caller.js";
import { UNBOUNDED, type Budget } from "../budget.js";
import { idBoundAt, type MarkedResource } from "../resources/batch.js";
import { resourceQuery } from "../resources/filter-query.js";
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
 *   (`sample`), by the query the runner evaluates the filter with when the job starts (`resourceQuery`,
 *   bounded by the present instead of the job's start). What one preview examines is bounded: the
 *   first PREVIEW_EXAMINED_MAX documents of the filter's index range in id order, the conditions the index does
 *   not serve checked on them; when the range holds more, `total` counts the matches among those and
 *   `total_is_lower_bound` is true (docs/jobs.md, "Previews"). At most PREVIEWS_PER_ACCOUNT previews of one
 *   account and mode run at once in one core process; the next is 429 `rate_limited`.
 * - An import: the item count, and the items that would fail by the per-item rules the runner applies
 *   (`importItemFields`), the first 100, each as `result.errors` shows it. No database command.
 */

/** Most documents a bulk preview examines (the first of the filter's index range in id order). */
export const PREVIEW_EXAMINED_MAX = 100_000;
/** Previews of one account and mode running at once in one core process. */
export const PREVIEWS_PER_ACCOUNT = 2;
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
  /** True when the count stopped at PREVIEW_EXAMINED_MAX documents: `total` is then "at least". */
  total_is_lower_bound: boolean;
}

/** Previews running now per account and mode (in this process): PREVIEWS_PER_ACCOUNT at most. */
export class PreviewGate {
  private readonly running = new Map<string, number>();
  constructor(readonly perAccount = PREVIEWS_PER_ACCOUNT) {}

  async run<T>(tenant: Tenant, work: () => Promise<T>): Promise<T> {
    const key = `${tenant.account}/${tenant.livemode}`;
    const now = this.running.get(key) ?? 0;
    if (now >= this.perAccount) {
      throw errors.of(
        "rate_limited",
        `At most ${this.perAccount} job previews of an account run at once in each mode; retry after the number of seconds in the Retry-After header.`,
      );
    }
    this.running.set(key, now + 1);
    try {
      return await work();
    } finally {
      const left = (this.running.get(key) ?? 1) - 1;
      if (left > 0) this.running.set(key, left);
      else this.running.delete(key);
    }
  }
}

export async function previewJob(
  db: Db,
  tenant: Tenant,
  typed: RequestedParams,
  files: JobFiles | null,
  budget: Budget = UNBOUNDED,
  examinedMax = PREVIEW_EXAMINED_MAX,
): Promise<JobPreview> {
  const base = { object: "job_preview" as const, type: typed.type, livemode: tenant.livemode };
  if (typed.type === "resources.import") {
    if ("items" in typed.params) {
      const items = typed.params.items;
      return { ...base, total: items.length, sample: [], errors: importErrors(items), total_is_lower_bound: false };
    }
    if (!files) throw new Error("jobs: imports need file storage");
    // A file import's preview reads at most PREVIEW_ROWS_MAX rows: its total is a lower bound past them.
    const preview = await fileImportPreview(files, tenant, typed.params.file);
    return { ...base, ...preview, total_is_lower_bound: preview.total >= PREVIEW_ROWS_MAX };
  }
  // The runner's query (matchingFilter's), as a window of the driving index's range, then the rest checked on it.
  const query = resourceQuery(tenant, (typed.params as { filter?: JobFilter }).filter ?? {}, { lte: idBoundAt(Date.now()) });
  const matches: Document[] = query.rest.length > 0 ? [{ $match: { $and: query.rest } }] : [];
  const pipeline: Document[] = [
    { $match: query.driver },
    { $sort: { _id: 1 } },
    { $limit: examinedMax },
    {
      $facet: {
        examined: [{ $count: "n" }],
        total: [...matches, { $count: "n" }],
        sample: [...matches, { $limit: PREVIEW_SAMPLE_SIZE }, { $project: { _id: 1 } }],
      },
    },
  ];
  const [found] = await db
    .collection<MarkedResource>(RESOURCES_COLLECTION)
    .aggregate<{ examined: { n: number }[]; total: { n: number }[]; sample: { _id: string }[] }>(pipeline, { hint: query.index, ...budget.db() })
    .toArray();
  const examined = found?.examined[0]?.n ?? 0;
  return {
    ...base,
    total: found?.total[0]?.n ?? 0,
    sample: (found?.sample ?? []).map((doc) => doc._id),
    errors: [],
    total_is_lower_bound: examined >= examinedMax,
  };
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
