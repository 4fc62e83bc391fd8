// The jobs part of `npm run chaos`'s noisy-neighbour phase (CONTRACT.md section 6, "Fair sharing"): one account
// floods the job queue up to its limit (JOBS_QUEUED_PER_ACCOUNT: its next create is 400 limit_exceeded) with
// imports that keep the workers busy, while another account runs small jobs one after another; reported: how
// long each of those waited from its create to its start, and how much of the flood was still queued then.
import { newTestKey } from "../stack/processes.js";
import { PublicApi, type JobRef } from "../stack/public-api.js";
import { log, sleep } from "./log.js";
import type { ChaosStack } from "./stack.js";

/** Creates the flood sends at once; it stops at the first limit_exceeded (or after FLOOD_MAX creates). */
const FLOOD_CONCURRENCY = 8;
const FLOOD_MAX = 400;
/** Items of each flooding import: enough that the flood holds the workers for a while. */
const FLOOD_ITEMS = 100;
/** The quiet account's jobs, one after another (each a one-item import). */
const QUIET_JOBS = 5;
const JOB_DEADLINE_MS = 120_000;

export interface NoisyJobs {
  /** Jobs the flooding account created before its create was refused. */
  flooded: number;
  /** Its creates answered 400 limit_exceeded (the flood stops at the first). */
  refused: number;
  /** Per quiet job with no flood (run first): ms from its create's answer to its start (first seen out of `queued`). */
  baselineWaitMs: number[];
  /** Per quiet job during the flood: the same. */
  quietWaitMs: number[];
  /** Per quiet job: the flooding account's jobs still queued once it had succeeded (the backlog it was not held behind). */
  floodQueuedAtEnd: number[];
  quietStatuses: string[];
  seconds: number;
}

/** Both accounts are fresh: the flood's events and jobs stay out of the other phases' counts. */
export async function runNoisyJobs(stack: ChaosStack): Promise<NoisyJobs> {
  const started = Date.now();
  const noisy = new PublicApi(stack.dir, stack.gatewayPort, (await newTestKey(stack.coreAddr)).secret, FLOOD_CONCURRENCY);
  const quiet = new PublicApi(stack.dir, stack.gatewayPort, (await newTestKey(stack.coreAddr)).secret);
  const tag = `noisy-${Date.now()}`;
  // The same small jobs with no flood first: what a job waits on this stack anyway.
  const baselineWaitMs: number[] = [];
  for (let i = 0; i < QUIET_JOBS; i++) baselineWaitMs.push((await quietJob(quiet, `${tag}-alone-${i}`)).waitMs);
  let flooded = 0;
  let refused = 0;
  const floodOne = async (n: number): Promise<boolean> => {
    const items = Array.from({ length: FLOOD_ITEMS }, (_, i) => ({ name: `${tag}-${n}-${i}` }));
    const reply = await noisy.request("POST", "/v1/jobs", { json: { type: "resources.import", params: { items } }, idempotencyKey: `${tag}-${n}` });
    if (reply.status === 201) flooded++;
    else if (reply.status === 400 && reply.body.includes('"limit_exceeded"')) refused++;
    else throw new Error(`flood create: ${reply.status} ${reply.body.slice(0, 300)}`);
    return reply.status === 201;
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: FLOOD_CONCURRENCY }, async () => {
      while (refused === 0 && next < FLOOD_MAX) if (!(await floodOne(next++))) return;
    }),
  );
  const floodQueued = async () => (await noisy.page("/v1/jobs", "status=queued")).data.length;
  log(`noisy jobs: one account created ${flooded} imports of ${FLOOD_ITEMS} items, then was refused (limit_exceeded); ${await floodQueued()} of them queued`);

  const quietWaitMs: number[] = [];
  const floodQueuedAtEnd: number[] = [];
  const quietStatuses: string[] = [];
  for (let i = 0; i < QUIET_JOBS; i++) {
    const { waitMs, status } = await quietJob(quiet, `${tag}-quiet-${i}`);
    quietWaitMs.push(waitMs);
    floodQueuedAtEnd.push(await floodQueued());
    quietStatuses.push(status);
  }
  log(
    `noisy jobs: the other account's ${QUIET_JOBS} jobs waited ${quietWaitMs.join(", ")} ms from create to start (${baselineWaitMs.join(", ")} ms with ` +
      `no flood), with ${floodQueuedAtEnd.join(", ")} of the flood still queued as each one finished`,
  );
  // The flood's leftovers are canceled, one request each (a job that finished meanwhile answers 409, which
  // `send` would retry as a key in use), so the workers' time goes to what comes after this phase.
  for (const job of (await noisy.all<JobRef>("/v1/jobs", "status=queued")).reverse()) {
    await noisy.request("POST", `/v1/jobs/${job.id}/cancel`).catch(() => undefined);
  }
  noisy.close();
  quiet.close();
  return { flooded, refused, baselineWaitMs, quietWaitMs, floodQueuedAtEnd, quietStatuses, seconds: Math.round((Date.now() - started) / 1000) };
}

/**
 * One small job of the quiet account: created, then its own GET (small: one item) every 10 ms until it ends.
 * Its wait is from the 201 to the first GET that shows it out of `queued` (each GET adds its own latency).
 */
async function quietJob(api: PublicApi, name: string): Promise<{ waitMs: number; status: string }> {
  const job = await api.send<JobRef>("POST", "/v1/jobs", { json: { type: "resources.import", params: { items: [{ name }] } }, idempotencyKey: name });
  const created = Date.now();
  let startedAt = 0;
  let status = "queued";
  while (!["succeeded", "failed", "canceled"].includes(status) && Date.now() - created < JOB_DEADLINE_MS) {
    status = (await api.send<{ status: string }>("GET", `/v1/jobs/${job.id}`)).status;
    if (status !== "queued" && startedAt === 0) startedAt = Date.now();
    await sleep(10);
  }
  return { waitMs: (startedAt || Date.now()) - created, status };
}

/** The phase's part of the printed report; required: every quiet job succeeded while the flood was still queued. */
export function noisyJobsReport(phase: NoisyJobs): Record<string, unknown> {
  const sorted = [...phase.quietWaitMs].sort((a, b) => a - b);
  return {
    other_account_job_wait_ms_no_flood: phase.baselineWaitMs,
    flood_jobs_created: phase.flooded,
    flood_creates_refused_limit_exceeded: phase.refused,
    other_account_job_wait_ms: phase.quietWaitMs,
    other_account_job_wait_ms_p50: sorted[Math.floor((sorted.length - 1) / 2)],
    other_account_job_wait_ms_max: sorted.at(-1),
    flood_queued_when_other_job_finished: phase.floodQueuedAtEnd,
    other_account_job_statuses: phase.quietStatuses,
    seconds: phase.seconds,
  };
}

/** What the phase requires: the flood met the limit, and each quiet job succeeded while the flood still had jobs queued. */
export function noisyJobsOk(phase: NoisyJobs): boolean {
  return phase.refused > 0 && phase.quietStatuses.every((s) => s === "succeeded") && phase.floodQueuedAtEnd.every((n) => n > 0);
}
