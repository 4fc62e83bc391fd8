/**
 * The heap of the worker processes the launcher starts (docs/files.md, "Memory"). A worker's live heap during a
 * million-row import or export is 30 to 40 MB, but V8 lets a busy process's old generation grow to several times that
 * before it collects, so its RSS grew by 200 MiB and more over idle while only garbage filled it. The launcher caps
 * the old generation (WORKER_HEAP_MB) and keeps the young generation small, so a worker's growth stays within the
 * contract's 64 MiB; 0 leaves V8's own sizing.
 */
export const DEFAULT_WORKER_HEAP_MB = 160;
/** The young generation's semi-spaces (MiB): what a scavenge walks, and what a busy process keeps resident. */
export const WORKER_SEMI_SPACE_MB = 4;

/** Node's flags for a worker with an old generation of `heapMb` MiB (none for 0). */
export function workerNodeFlags(heapMb: number = DEFAULT_WORKER_HEAP_MB): string[] {
  return heapMb > 0 ? [`--max-old-space-size=${heapMb}`, `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`] : [];
}
