import type { Job } from "../api/client";
import type { JobStatus } from "../vocabulary";

/** The statuses a job ends in (the vocabulary's, checked by type). */
export const FINISHED_STATUSES = ["succeeded", "failed", "canceled"] as const satisfies readonly JobStatus[];

export function isFinished(status: string): boolean {
  return (FINISHED_STATUSES as readonly string[]).includes(status);
}

/** A job's progress for its bar and its line: done / total (total unknown until the job has counted its items). */
export interface ProgressView {
  /** 0 to 100, or null while the total is unknown (an indeterminate bar). */
  readonly percent: number | null;
  readonly done: number;
  readonly total: number | null;
  readonly label: string;
}

export function progressView(job: Pick<Job, "status" | "progress">): ProgressView {
  const { total, processed, failed, skipped } = job.progress;
  const done = processed;
  const known = total ?? null;
  let percent: number | null = null;
  if (known !== null) percent = known === 0 ? 100 : Math.min(100, Math.floor((done / known) * 100));
  if (job.status === "succeeded") percent = 100;
  const parts = [`${done.toLocaleString("en-US")}${known !== null ? ` of ${known.toLocaleString("en-US")}` : ""} processed`];
  if (failed > 0) parts.push(`${failed.toLocaleString("en-US")} failed`);
  if (skipped > 0) parts.push(`${skipped.toLocaleString("en-US")} skipped`);
  const label = `${parts.join(", ")}${percent !== null ? ` (${percent}%)` : ""}`;
  return { percent, done, total: known, label };
}

/** An upload's progress line: bytes sent of the file's size. */
export function uploadLabel(sent: number, size: number): string {
  const percent = size === 0 ? 100 : Math.min(100, Math.floor((sent / size) * 100));
  return `${formatBytes(sent)} of ${formatBytes(size)} sent (${percent}%)`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
}

/** What an account stores of its quota (`GET /v1/files`: `used_bytes`, `quota_bytes`): the line and the share in percent. */
export function storageUse(used: number, quota: number): { readonly percent: number; readonly label: string } {
  const percent = quota <= 0 ? 100 : Math.min(100, Math.floor((used / quota) * 100));
  return { percent, label: `${formatBytes(used)} of ${formatBytes(quota)} used (${percent}%)` };
}
