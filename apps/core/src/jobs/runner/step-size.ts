/**
 * How many rows one step of an import or an export takes (docs/jobs.md, "Step sizes"). A step is the unit a
 * takeover redoes, so it must be able to finish between two deaths of its worker: the size the checkpoint carries
 * is halved for each attempt since the last checkpoint that made progress, doubled back after a quick step and
 * halved after a slow one. A step's rows are bounded by the executor's chunk whatever happens.
 */

/** The duration a step aims at: well inside the time a worker lives between kills in the chaos runs (3 to 7 s). */
export const STEP_TARGET_MS = 1_000;
/** The fewest rows a step takes (unless the executor's chunk is smaller). */
export const MIN_STEP_ROWS = 25;

/** The rows of the next step: the checkpoint's size (the chunk at first), halved for each attempt without progress. */
export function stepRows(carried: number | undefined, chunk: number, stalled: number): number {
  const floor = Math.min(MIN_STEP_ROWS, chunk);
  const base = Math.min(chunk, Math.max(floor, carried ?? chunk));
  return Math.max(floor, Math.floor(base / 2 ** Math.min(stalled, 30)));
}

/** The size the checkpoint after a step carries: doubled after a step under half the target, halved after one over twice it. */
export function nextStepRows(used: number, elapsedMs: number, chunk: number): number {
  const floor = Math.min(MIN_STEP_ROWS, chunk);
  if (elapsedMs <= STEP_TARGET_MS / 2) return Math.min(chunk, used * 2);
  if (elapsedMs > STEP_TARGET_MS * 2) return Math.max(floor, Math.floor(used / 2));
  return used;
}
