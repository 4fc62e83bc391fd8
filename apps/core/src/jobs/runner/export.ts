import type { Filter } from "mongodb";
import type { Tenant } from "../../caller.js";
import { matchingFilter, type MarkedResource } from "../../resources/batch.js";
import { ANSWER_PROJECTION, type AnsweredResource } from "../../resources/model.js";
import { RESOURCES_COLLECTION } from "../../resources/store.js";
import { exportOf } from "../model.js";
import { csvLine, csvResource, EXPORT_CSV_COLUMNS, jsonResource } from "./export-lines.js";
import { newOutput, settleOutput, writePart } from "./output.js";
import type { Executor } from "./seam.js";
import { nextStepRows, stepRows } from "./step-size.js";

/** Resources per chunk: one read, one part of the file and one checkpoint each. */
export const EXPORT_CHUNK = 2_000;
/** A part stops growing past this many bytes (of UTF-16 text: about as many bytes of UTF-8 for most rows). */
export const PART_BYTES = 4 * 1024 * 1024;

/**
 * `resources.export` (CONTRACT.md section 11): the resources matching the filter when the job started, each
 * exactly once, as it is when the export reads it. The walk is in id order from the last id written, up to
 * the bound fixed at the start (`idBoundAt(start)`: a resource made later has a higher id and is never read),
 * by the filter's own index (`matchingFilter`, the bulk jobs' query: deleted resources are not read); each
 * chunk is one part of the file at the index the checkpoint holds, and the checkpoint moves the last id and
 * the part count together, so a takeover redoes the chunk in place: no row twice, none missing. The file is
 * announced by the finish of a succeeded export only; a canceled or failed one drops it (no file).
 */
export function exportExecutor(chunk = EXPORT_CHUNK): Executor {
  return {
    async step(run, state) {
      const walk = state.export!;
      if (walk.complete) return null;
      const { filter, format } = exportOf(run.job.params);
      const started = state.output ?? newOutput(run, "resources_export", format);
      const tenant: Tenant = { account: run.job.account, livemode: run.job.livemode };
      const stepStart = Date.now();
      // Fewer rows after attempts without progress, and after slow steps (step-size.ts): a redo rewrites the part in place.
      const size = stepRows(state.step_rows, chunk, run.stalled?.() ?? 0);
      const cursor = run.db
        .collection<MarkedResource>(RESOURCES_COLLECTION)
        .find(matchingFilter(tenant, filter, walk.last, walk.bound) as Filter<MarkedResource>, { projection: ANSWER_PROJECTION })
        .sort({ _id: 1 })
        .limit(size)
        .batchSize(Math.min(size, 500));
      // Rows until the chunk's count or PART_BYTES: a part (and what this process holds) stays small whatever the resources hold.
      const lines: string[] = format === "csv" && started.parts === 0 ? [csvLine([...EXPORT_CSV_COLUMNS])] : [];
      let bytes = 0;
      let rows = 0;
      let last = walk.last;
      let cut = false;
      try {
        for await (const doc of cursor as unknown as AsyncIterable<AnsweredResource>) {
          const line = format === "csv" ? csvResource(doc) : jsonResource(doc);
          lines.push(line);
          bytes += line.length;
          rows++;
          last = doc._id;
          if (bytes >= PART_BYTES && rows < size) {
            cut = true;
            break;
          }
        }
      } finally {
        await cursor.close();
      }
      const complete = !cut && rows < size;
      // An empty last chunk writes no part (an export of nothing is an empty file, or a CSV header alone).
      const output = lines.length > 0 ? await writePart(run, started, Buffer.from(lines.join(""))) : started;
      const stepRowsNext = rows > 0 ? nextStepRows(size, ((Date.now() - stepStart) * size) / rows, chunk) : size;
      return { ...state, export: { ...walk, last, complete }, output, next: state.next + rows, done: state.done + rows, step_rows: stepRowsNext };
    },
    async finish(run, state, status) {
      const file = await settleOutput(run, state, status === "succeeded" ? "finish" : "discard");
      return { file };
    },
  };
}
