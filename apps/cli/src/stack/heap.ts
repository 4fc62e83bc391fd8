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

/**
 * The young generation of gateway and core (MiB per semi-space; docs/files.md, "Memory"). An upload's bytes cross
 * them as Buffers that die young, and V8 frees a Buffer's memory only at the collection that finds it dead: with the
 * semi-spaces V8 grows to under load, tens of MiB of them waited for a scavenge, and the external-memory limit's
 * full collection (64 MB over the last) came first, so an upload grew each process by 65 to 90 MiB. At 4 MiB a
 * scavenge comes every few MiB of an upload, and the request path's CPU per request measured the same.
 */
export const DEFAULT_SEMI_SPACE_MB = 4;

/** Node's flags for gateway and core with semi-spaces of `semiSpaceMb` MiB (none for 0: V8's own sizing). */
export function serviceNodeFlags(semiSpaceMb: number = DEFAULT_SEMI_SPACE_MB): string[] {
  return semiSpaceMb > 0 ? [`--max-semi-space-size=${semiSpaceMb}`] : [];
}

/** Node's flags for a worker with an old generation of `heapMb` MiB (none for 0). */
export function workerNodeFlags(heapMb: number = DEFAULT_WORKER_HEAP_MB): string[] {
  return heapMb > 0 ? [`--max-old-space-size=${heapMb}`, `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`] : [];
}
