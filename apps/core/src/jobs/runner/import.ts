import type { Tenant } from "../../caller.js";
import { importedResource, importedResourceId } from "../../resources/batch.js";
import type { ResourceDocument } from "../../resources/model.js";
import { RESOURCES_COLLECTION, ResourceStore } from "../../resources/store.js";
import { importItemFields } from "../items.js";
import { itemsOf, type JobItemError } from "../model.js";
import { recordErrors } from "./errors-record.js";
import type { Executor } from "./seam.js";

/**
 * Items per chunk: one `insertMany` and one checkpoint each. The checkpoint rewrites the job document,
 * which holds the items (about 600 KB for 10,000): 1,000 per chunk keeps those rewrites to 10 per import.
 */
export const IMPORT_CHUNK = 1_000;

const NO_REQUEST = { requestId: null, idempotencyKey: null };

/**
 * `resources.import`: each chunk validates its items (a failing item is recorded and counted, the
 * rest go on), inserts the valid ones with one unordered `insertMany`, each resource with its
 * `resource.created` event in its own outbox, and ids derived from the job id and the item index: a
 * chunk redone after a takeover inserts nothing twice (a duplicate key is what the first attempt wrote).
 */
export function importExecutor(chunk = IMPORT_CHUNK): Executor {
  return {
    async step(run, state) {
      const items = itemsOf(run.job.params);
      if (state.next >= items.length) return null;
      const tenant: Tenant = { account: run.job.account, livemode: run.job.livemode };
      const end = Math.min(items.length, state.next + chunk);
      const docs: ResourceDocument[] = [];
      const indexes: number[] = [];
      const failed: JobItemError[] = [];
      for (let index = state.next; index < end; index++) {
        const check = importItemFields(items[index]!);
        if (!check.ok) {
          failed.push({ index, id: null, ...check.error });
          continue;
        }
        docs.push(importedResource(tenant, importedResourceId(run.job._id, index, state.chunk_ms), check.fields, state.chunk_ms, NO_REQUEST));
        indexes.push(index);
      }
      const refused = await new ResourceStore(run.db).insertMany(docs);
      for (const [position, message] of refused) failed.push({ index: indexes[position]!, id: null, code: "write_failed", param: null, message });
      failed.sort((a, b) => a.index - b.index);
      run.written(
        RESOURCES_COLLECTION,
        docs.filter((_, i) => !refused.has(i)).map((d) => d._id),
      );
      const errors = await recordErrors(run.db, run.job, state, failed);
      return { ...state, next: end, chunk_ms: Date.now(), done: state.done + docs.length - refused.size, failed: state.failed + failed.length, errors };
    },
  };
}
