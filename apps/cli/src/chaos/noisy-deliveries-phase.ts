// The noisy-neighbour phase of `npm run chaos` for webhook deliveries (CONTRACT.md section 7, "Fair delivery"): one
// account's 16 endpoints point at a server that accepts connections and never answers, with an import fanned out to
// them (a backlog of attempts that each run into the 15 s timeout), while another account runs the normal load (creates,
// each followed by one or two updates) with one endpoint at a receiver of its own. No kills in this phase, and core
// runs without its crash points: what it measures is how long the other account's events take to arrive (from each
// event's creation), p50 and p99, against the same load of another fresh account run just before the backlog was
// queued (the baseline: what the machine gives that burst). Then the dead endpoints are deleted, so their backlog
// ends without attempts.
import { newTestKey } from "../stack/processes.js";
import { addEndpoints, eventLagMs, quantile, queueDeadBacklog, startArrivalReceiver, startSilentServer } from "../stack/noisy-neighbour.js";
import { PublicApi } from "../stack/public-api.js";
import { settle, type StoredState } from "./invariants.js";
import { startLoad } from "./load.js";
import { log, sleep } from "./log.js";
import type { ChaosStack } from "./stack.js";

const DEAD_ENDPOINTS = 16;
const DEADLINE_MS = 4 * 60_000;
const SETTLE_MS = 120_000;

export interface NoisyDeliveriesPhase {
  deadEndpoints: number;
  backlogItems: number;
  /** The noisy account's deliveries still queued when the other account's load began. */
  pendingForDeadAtStart: number;
  creates: number;
  /** The other account's events that arrived, and how long after their creation. */
  delivered: number;
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  /** The same load of a third account just before the backlog was queued: what the machine gives without it. */
  baseline: { delivered: number; lagP50Ms: number; lagP99Ms: number; lagMaxMs: number };
  /** The other account's events still waiting for their delivery at the end. */
  undelivered: number;
  seconds: number;
}

export async function runNoisyDeliveriesPhase(
  stack: ChaosStack,
  state: StoredState,
  options: { items: number; creates: number },
): Promise<NoisyDeliveriesPhase> {
  const started = Date.now();
  const tag = `noisy-${started}`;
  // Core's own crash points would stall every account alike; this phase measures what one account does to another.
  await stack.endCoreFaults();
  const dead = await startSilentServer();
  const noisy = await newTestKey(stack.coreAddr);
  const noisyApi = new PublicApi(stack.dir, stack.gatewayPort, noisy.secret);
  try {
    // The baseline: the same load from an account of its own, with no backlog anywhere. Its lag is what this
    // machine gives that load (a burst of 16 clients on 2 shared cores); the phase's figure is read against it.
    const baseline = await timedLoad(stack, state, options.creates, tag);
    log(`noisy neighbour: baseline without the backlog: lag p50 ${baseline.lagP50Ms} ms, p99 ${baseline.lagP99Ms} ms`);
    log(`noisy neighbour: ${DEAD_ENDPOINTS} endpoints that never answer, an import of ${options.items} items fanned out to them`);
    const { endpoints, job } = await queueDeadBacklog(noisyApi, dead, { endpoints: DEAD_ENDPOINTS, items: options.items, tag });
    await noisyApi.jobEnd(job, { pollMs: 500, timeoutMs: DEADLINE_MS });
    // The backlog in place (every item's event fanned out to every endpoint) before the other account starts:
    // the bound is about a queued backlog, not about the import's own writes.
    const backlog = DEAD_ENDPOINTS * options.items;
    const queuedBy = Date.now() + DEADLINE_MS;
    while ((await state.deliveriesOf(noisy.accountId)) < backlog && Date.now() < queuedBy) await sleep(1_000);
    const pendingForDeadAtStart = await state.deliveriesOf(noisy.accountId, "pending");
    log(`noisy neighbour: ${pendingForDeadAtStart} deliveries queued for the dead endpoints; the other account runs ${options.creates} creates with updates`);
    const measured = await timedLoad(stack, state, options.creates, tag);
    const phase = {
      deadEndpoints: DEAD_ENDPOINTS,
      backlogItems: options.items,
      pendingForDeadAtStart,
      creates: measured.creates,
      delivered: measured.delivered,
      lagP50Ms: measured.lagP50Ms,
      lagP99Ms: measured.lagP99Ms,
      lagMaxMs: measured.lagMaxMs,
      baseline: { delivered: baseline.delivered, lagP50Ms: baseline.lagP50Ms, lagP99Ms: baseline.lagP99Ms, lagMaxMs: baseline.lagMaxMs },
      undelivered: measured.undelivered,
      seconds: Math.round((Date.now() - started) / 1000),
    };
    log(
      `noisy neighbour: ${phase.delivered} deliveries of the other account, lag p50 ${phase.lagP50Ms} ms, p99 ${phase.lagP99Ms} ms, max ${phase.lagMaxMs} ms`,
    );
    for (const id of endpoints) await noisyApi.send("DELETE", `/v1/webhook_endpoints/${id}`);
    return phase;
  } finally {
    noisyApi.close();
    await dead.close();
  }
}

/** A fresh account with one endpoint at a receiver of its own runs the normal load; its events' delivery lags. */
async function timedLoad(stack: ChaosStack, state: StoredState, creates: number, tag: string) {
  const receiver = await startArrivalReceiver();
  const key = await newTestKey(stack.coreAddr);
  const api = new PublicApi(stack.dir, stack.gatewayPort, key.secret, 16);
  try {
    await addEndpoints(api, 1, () => receiver.url("/calm"), tag);
    const load = startLoad(api, { total: creates, concurrency: 16, deadline: Date.now() + DEADLINE_MS, updatesOf: (i) => 1 + (i % 2) });
    await load.done;
    const left = await settle(api, state, { account: key.accountId, webhooks: true, boundMs: SETTLE_MS });
    const lags = [...receiver.arrivedAt].map(([event, at]) => eventLagMs(event, at));
    return {
      creates: load.outcomes.ok,
      delivered: lags.length,
      lagP50Ms: quantile(lags, 0.5),
      lagP99Ms: quantile(lags, 0.99),
      lagMaxMs: Math.max(...lags),
      undelivered: left.awaitingWebhooks,
    };
  } finally {
    api.close();
    await receiver.close();
  }
}
