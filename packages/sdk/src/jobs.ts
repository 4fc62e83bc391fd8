import type { RequestOptions } from "./options.js";
import type { RequestSender } from "./request.js";
import type { RMSResponse } from "./response.js";
import { sleep } from "./retry.js";
import type { Schemas } from "./types.js";

export interface WaitOptions extends RequestOptions {
  /** How long to wait for the job to finish, in milliseconds (default: as long as it takes); each look at it has the client's timeout. */
  readonly timeoutMs?: number;
  /** The first pause between looks at the job; each next one is longer, up to 2 s (default 250 ms). */
  readonly intervalMs?: number;
}

/** A job that had not finished when `jobs.wait` stopped waiting: `job` is how it was last seen. */
export class JobWaitTimeoutError extends Error {
  readonly job: Schemas["Job"];
  constructor(job: Schemas["Job"], timeoutMs: number) {
    super(`job ${job.id} is still ${job.status} after ${timeoutMs} ms`);
    this.name = "JobWaitTimeoutError";
    this.job = job;
  }
}

const FINISHED = new Set(["succeeded", "failed", "canceled"]);
const MAX_INTERVAL_MS = 2_000;

/** `jobs.wait`: looks at the job until it has finished (succeeded, failed or canceled) and answers it. */
export async function waitForJob(sender: RequestSender, id: string, options: WaitOptions = {}): Promise<RMSResponse<Schemas["Job"]>> {
  const { timeoutMs, intervalMs = 250, ...request } = options;
  const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
  let pause = intervalMs;
  for (;;) {
    const job = await sender.json<Schemas["Job"]>({ method: "GET", path: `/v1/jobs/${encodeURIComponent(id)}`, options: request });
    if (FINISHED.has(job.status)) return job;
    const left = deadline - Date.now();
    if (left <= 0) throw new JobWaitTimeoutError(job, timeoutMs!);
    await sleep(Math.min(pause, left), request.signal);
    pause = Math.min(pause * 2, MAX_INTERVAL_MS);
  }
}
