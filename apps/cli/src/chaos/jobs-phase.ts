// The jobs phase of `npm run chaos`: in a fresh account, a 10,000-item import and then a bulk update of what it
// created, through the public API, while the stack's worker processes are SIGKILLed at random (their supervisors
// restart them) and each job loses its worker once midway; then it settles and is counted (invariants.ts).
import { newTestKey } from "../stack/processes.js";
import { PublicApi, type JobRef } from "../stack/public-api.js";
import { countJobsPhase, settle, type JobsPhaseCounts, type StoredState } from "./invariants.js";
import { log, sleep } from "./log.js";
import { anyOf, startKiller, type ChaosStack } from "./stack.js";

const JOB_DEADLINE_MS = 8 * 60_000;
const SETTLE_MS = 180_000;

export interface JobOutcome {
  id: string;
  status: string;
  attempts: number;
}

export interface JobsPhase {
  items: number;
  imported: JobOutcome;
  updated: JobOutcome;
  counts: JobsPhaseCounts;
  workerKills: number;
  seconds: number;
}

export async function runJobsPhase(stack: ChaosStack, state: StoredState, items: number): Promise<JobsPhase> {
  const started = Date.now();
  const tag = `jobs-${Date.now()}`;
  // Core may be starting again after a crash (its crash point, or a database fault of the cluster run).
  let key: Awaited<ReturnType<typeof newTestKey>> | undefined;
  for (let tries = 0; !key; tries++)
    key = await newTestKey(stack.coreAddr).catch((error: unknown) => (tries < 100 ? sleep(500).then(() => undefined) : Promise.reject(error)));
  const { accountId, secret } = key;
  const api = new PublicApi(stack.dir, stack.gatewayPort, secret);
  const workers = stack.workerNames;
  // Half the kills hit every worker at once, so the one holding a job is among them; the others a random one.
  const killer = startKiller(stack, 3_000, 7_000, () => (Math.random() < 0.5 ? [...workers] : anyOf(workers)));
  let midwayKills = 0;
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;

  /**
   * Each job loses its worker at least once: every worker is SIGKILLed once the job's first items are committed
   * (`committed`: a resources list query that finds them).
   */
  const killHolderMidway = async (job: JobRef, committed: string) => {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if ((await api.page("/v1/resources", committed, 1)).data.length > 0) {
        if (await api.jobIs(job, "succeeded")) return;
        for (const name of workers) if (stack.kill(name)) midwayKills++;
        return;
      }
      await sleep(20);
    }
  };
  const post = (body: unknown, key: string) => api.send<JobRef>("POST", "/v1/jobs", { json: body, idempotencyKey: key }, JOB_DEADLINE_MS);
  const waitFor = async (job: JobRef): Promise<JobOutcome> => {
    await api.jobEnd(job, { pollMs: 250, timeoutMs: JOB_DEADLINE_MS });
    const { status, attempts } = await api.send<{ status: string; attempts: number }>("GET", `/v1/jobs/${job.id}`);
    return { id: job.id, status, attempts };
  };

  log(
    `jobs: import of ${items} items, then a bulk update of them, ${workers.length} workers SIGKILLed every 3 to 7 s (half of the kills hit every ` +
      `worker, so the job's holder among them) and every worker once midway through each job`,
  );
  const importJob = await post(
    { type: "resources.import", params: { items: Array.from({ length: items }, (_, i) => ({ name: `${tag}-${i}`, metadata: { tag } })) } },
    `${tag}-import`,
  );
  await killHolderMidway(importJob, "");
  const imported = await waitFor(importJob);
  log(`jobs: import ${imported.status} after ${elapsed()}, attempts ${imported.attempts}`);
  const updateJob = await post(
    { type: "resources.bulk_update", params: { filter: { metadata: { tag } }, update: { status: "paused", metadata: { step: "updated" } } } },
    `${tag}-update`,
  );
  await killHolderMidway(updateJob, "status=paused");
  const updated = await waitFor(updateJob);
  const kills = await killer.stop();
  const workerKills = kills.worker + midwayKills;
  log(`jobs: bulk update ${updated.status} after ${elapsed()}, attempts ${updated.attempts}, ${workerKills} kills`);

  // Settle: the workers that are up (and core's sweep) move what is left in outboxes.
  const left = await settle(api, state, { account: accountId, jobIds: [importJob.id, updateJob.id], webhooks: false, boundMs: SETTLE_MS });
  log(`jobs: settled in ${left.seconds.toFixed(1)} s; documents with pending events: ${left.outboxes}`);
  const counts = await countJobsPhase({ api, state, account: accountId, tag, items, jobs: [imported, updated], documentsWithPendingEvents: left.outboxes });
  api.close();
  return { items, imported, updated, counts, workerKills, seconds: Math.round((Date.now() - started) / 1000) };
}
