import type { Tenant } from "../../caller.js";
import type { JobOutput, OutputPurpose } from "../files.js";
import type { JobResult } from "../model.js";
import type { RowFormat } from "../rows/model.js";
import type { Checkpoint, JobRun } from "./seam.js";

/**
 * A job's output file (CONTRACT.md section 11): the results of an import or a bulk job, the rows of an export.
 * Written part by part, one part per chunk at the index the checkpoint holds (`output.parts`), so a chunk
 * redone after a takeover writes its part again in place and the file holds every line once. Announced
 * (size, sha256, listed, readable) only by the finish.
 */

function tenantOf(run: JobRun): Tenant {
  return { account: run.job.account, livemode: run.job.livemode };
}

/**
 * The name an output file is stored and downloaded under: named after its job and for what it holds
 * (`job_..._results.jsonl`, `resources_export_job_....csv`), so a folder of downloads says which is which.
 */
export function outputFilename(job: string, purpose: OutputPurpose, format: RowFormat): string {
  return purpose === "job_results" ? `${job}_results.${format}` : `resources_export_${job}.${format}`;
}

/** The job's output of `purpose` (the same file on every call and every worker: its id derives from the job). */
export function outputOf(run: JobRun, purpose: OutputPurpose, format: RowFormat): JobOutput {
  return run.files.output(tenantOf(run), run.job._id, purpose, format, outputFilename(run.job._id, purpose, format));
}

/**
 * Writes the chunk's part at the index the checkpoint holds (a redo after a takeover writes it again in place),
 * fenced by the lease's epoch: a worker whose job was taken over cannot overwrite its successor's part (steps vary
 * in size, so the two may cut their rows at different boundaries); it gets FencedOut and stops.
 */
export async function writePart(run: JobRun, output: NonNullable<Checkpoint["output"]>, bytes: Buffer): Promise<NonNullable<Checkpoint["output"]>> {
  await outputOf(run, output.purpose, output.format).writeChunk(output.parts, bytes, run.job.epoch);
  return { ...output, parts: output.parts + 1 };
}

/** Announces the output (the parts written, in order) or drops it; the file id when it is kept. */
export async function settleOutput(run: JobRun, state: Checkpoint, how: "finish" | "discard"): Promise<string | null> {
  if (!state.output) return null;
  const output = outputOf(run, state.output.purpose, state.output.format);
  if (how === "discard") {
    await output.discard();
    return null;
  }
  // An output of nothing (an export that matched no resource, as JSONL) is an empty file: its one part, empty, makes
  // the blob the finish seals (without a part there is no blob, and the finish would take it for one lost).
  if (state.output.parts === 0) await output.writeChunk(0, Buffer.alloc(0), run.job.epoch);
  return (await output.finish()).id;
}

/** The output a job starts writing: part 0 next. */
export function newOutput(run: JobRun, purpose: OutputPurpose, format: RowFormat): NonNullable<Checkpoint["output"]> {
  return { file: outputOf(run, purpose, format).fileId, purpose, format, parts: 0 };
}

/** `result.results_file` of an import or a bulk job. */
export function resultsFileResult(file: string | null): Partial<JobResult> {
  return { results_file: file };
}
