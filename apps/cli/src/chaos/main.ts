// `npm run chaos`: 1,000 creates, each followed by one or two updates, with random SIGKILLs of core, gateway and
// the workers and client retries with the same Idempotency-Keys, while one webhook endpoint takes every event at
// a local receiver; then the stack settles (outboxes empty, deliveries done), a jobs phase runs under worker
// kills, and both are counted: resources, committed changes, their events and their deliveries; last, a
// noisy-neighbour phase: one account floods its job queue (noisy-jobs.ts) and its 16 endpoints never answer
// (noisy-deliveries-phase.ts) while another account runs, whose job wait and delivery lag are reported. Loopback
// only, bounded in time. Everything is made through the admin gRPC service (accounts, keys) and the public API
// (the endpoint, resources, jobs). The parts: stack.ts (processes and kills), load.ts, receiver.ts,
// jobs-phase.ts, invariants.ts (what is counted and checked), report.ts. With `--cluster` the same runs against the
// cluster of `npm run cluster` (cluster-stack.ts: two of each process, three mongod members, HAProxy), whose
// primary is also SIGKILLed and frozen (db-faults.ts); the report adds the elections seen and the rollbacks found
// (rollbacks.ts). There, the run also cuts the primary off from the other members and a core or a gateway off from
// the database (partitions.ts, in a network namespace of the run's own), records every client operation of the
// resources phase with readers beside the load (history.ts, readers.ts) and ends with the checker's verdict on
// that history (checker.ts); `--weaken` runs core with write concern 1 and the gateways' rate limits in memory, to
// show the checker can fail. `--upgrade-from <commit>` starts the cluster on an earlier release's build and replaces
// each process by this build while the load runs (upgrade.ts); `--rollback` then replaces each by that build again.
import { join } from "node:path";
import { ConfigError } from "@rms/config";
import { newMasterKeyText } from "@rms/core/settings";
import { newTestKey } from "../stack/processes.js";
import { PublicApi } from "../stack/public-api.js";
import { countResourcesPhase, settle, StoredState } from "./invariants.js";
import { runFilesPhase } from "./files-phase.js";
import { runJobsPhase } from "./jobs-phase.js";
import { noisyJobsOk, noisyJobsReport, runNoisyJobs } from "./noisy-jobs.js";
import { runNoisyDeliveriesPhase } from "./noisy-deliveries-phase.js";
import { startLoad } from "./load.js";
import { elapsedSeconds, log, sleep, startedAt } from "./log.js";
import { startReceiver } from "./receiver.js";
import { jobsReport, noisyDeliveriesReport, printReport, resourcesReport } from "./report.js";
import { anyOf, startChaosStack, startKiller, type ChaosStack } from "./stack.js";
import { CHAOS_ELECTION_TIMEOUT_MS, startChaosCluster, type ChaosCluster } from "./cluster-stack.js";
import { startDbFaults, watchElections, type DbFault } from "./db-faults.js";
import { countRollbacks } from "./rollbacks.js";
import { deploymentOf, parseChaosConfig, type ChaosConfig } from "./config.js";
import { check } from "./checker.js";
import { History } from "./history.js";
import { enterOwnNetwork, prepareNetwork, startPartitions, type Partitions } from "./partitions.js";
import { finalReads, startReaders } from "./readers.js";
import { releaseBuild } from "../releases/build.js";
import { scriptsOf, startRollingUpgrade } from "./upgrade.js";

/** Its configuration, parsed once (config.ts): a wrong value stops it here with one line, exit 2. */
let config: ChaosConfig;
try {
  config = parseChaosConfig(process.env, process.argv.slice(2));
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`chaos: ${error.message}\n`);
  process.exit(2);
}

const TOTAL = config.requests;
const CONCURRENCY = 16;
const DEADLINE_MS = 6 * 60_000;
/**
 * With `--cluster`, from the load's start (`CHAOS_CLUSTER_LOAD_SECONDS`, default 1,200): each database fault stops
 * writes for seconds, and a frozen primary for up to 15 s.
 */
const CLUSTER_DEADLINE_MS = config.clusterLoadSeconds * 1000;
/** Bound on the wait, after the clients finish, for the relay to empty every outbox and the workers to finish every delivery. */
const SETTLE_MS = 120_000;
/** Worker processes, each SIGKILLed at random like core and gateway. */
const WORKERS = config.workers;
/** The jobs phase's import size. */
const JOB_ITEMS = config.jobItems;
/** The files phase's rows (`CHAOS_FILE_ROWS`; 0 skips the phase): an import from a file and an export of what it made. */
const FILE_ROWS = config.fileRows;
/** The noisy-neighbour phase: the import fanned out to the 16 dead endpoints, and the other account's creates. */
const NOISY_ITEMS = config.noisyItems;
const NOISY_CREATES = config.noisyCreates;
/** A compressed retry schedule: a delivery lost with a killed worker, or refused by the receiver, comes back within seconds. */
const RETRY_SCHEDULE = "1s,2s,3s,5s,5s,5s,5s,5s";
/** Share of deliveries the receiver answers with a 500, so retries happen too. */
const RECEIVER_FAILURE_RATE = 0.05;
/** Updates per resource after its create is acknowledged: one or two. */
const updatesOf = (i: number) => 1 + (i % 2);

/** `--cluster`: against the cluster of `npm run cluster`, with the replica set's primary killed and frozen too. */
const CLUSTER = config.cluster;
/** Database faults: one every 20 to 40 s once the set is whole again, SIGKILL and SIGSTOP alternately; a freeze lasts 15 s. */
const DB_FAULTS = { minGapMs: 20_000, maxGapMs: 40_000, freezeMs: 15_000 };
/** Partitions (`--cluster`; `CHAOS_PARTITIONS=0` leaves them out): one every 15 to 30 s once the set is whole, each held 10 s (elections take 2 to 4 s). */
const PARTITIONS = { minGapMs: 15_000, maxGapMs: 30_000, holdMs: 10_000 };
/** `--weaken`: core with write concern 1 and the gateways' rate limits in memory (config.ts, deploymentOf); the checker must then find anomalies. */
const WEAKEN = config.weaken;
/** Clients reading beside the load, recorded in the history with it. */
const READERS = config.readers;
/** Where the history goes, one operation per line. */
const HISTORY_FILE = config.historyFile ?? join(process.cwd(), `chaos-history-${new Date().toISOString().replace(/[:.]/g, "-")}.jsonl`);
/** `--upgrade-from <commit>`: the cluster starts on that commit's build (built once, cached outside the repository). */
const UPGRADE = config.upgrade;
const upgradeFrom = UPGRADE ? await releaseBuild(UPGRADE.from, { log }) : undefined;
// In the run's own network namespace (this process runs the rest there and exits with it), or without partitions.
const partitionable = await enterOwnNetwork(CLUSTER && config.partitions);

const receiver = await startReceiver({ failureRate: RECEIVER_FAILURE_RATE });
const stackOptions = {
  workers: WORKERS,
  ...deploymentOf(WEAKEN),
  // Core seals the endpoint's secret and accepts its loopback url; the workers deliver to it. A short jobs
  // lease: a killed worker's job is taken over within about 2 to 3 s (the lease, then a worker's next look), well
  // inside the 3 to 7 s between kills of the jobs and files phases, so a step can finish between two kills.
  settings: { RMS_SECRET_KEY: newMasterKeyText(), WEBHOOK_ALLOW_PRIVATE: "true", WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE, JOBS_LEASE_MS: "2000" },
};
const network = partitionable ? await prepareNetwork() : undefined;
const stack: ChaosStack = CLUSTER
  ? await startChaosCluster(stackOptions, network?.place, upgradeFrom ? scriptsOf(upgradeFrom) : undefined)
  : await startChaosStack(stackOptions);
const set = CLUSTER ? (stack as ChaosCluster).set : undefined;
if (set) {
  log(
    `cluster up: ${set.members.length} mongod members (election timeout ${CHAOS_ELECTION_TIMEOUT_MS} ms), cores ` +
      `${(stack as ChaosCluster).cluster.coreAddrs.join(", ")}, ${stack.killable.length} processes to SIGKILL, HAProxy on ${stack.gatewayPort}`,
  );
}
const elections = set ? watchElections(set) : undefined;
let key: { accountId: string; secret: string } | undefined;
while (!key)
  key = await newTestKey(stack.coreAddr).catch(async () => {
    await sleep(300);
    return undefined;
  });
const { accountId, secret } = key;
// One keep-alive connection pool, as a real client would use (no TLS handshake per request).
const api = new PublicApi(stack.dir, stack.gatewayPort, secret, CONCURRENCY);
// One endpoint taking every event of the account; its secret (shown once, in this answer) verifies deliveries.
const endpoint = await api.send<{ id: string; secret: string }>("POST", "/v1/webhook_endpoints", {
  form: `url=${encodeURIComponent(receiver.url)}&enabled_events[]=*`,
  idempotencyKey: "chaos-endpoint",
});
receiver.verifyWith(endpoint.secret);
log(
  `stack up with ${stack.workerNames.length} workers; ${TOTAL} creates, each followed by 1 or 2 updates, concurrency ${CONCURRENCY}; every event ` +
    `delivered to ${receiver.url} (${endpoint.id})`,
);

const killer = startKiller(stack, 5_000, 10_000, () => anyOf(stack.killable));
const dbFaults: DbFault[] = [];
const resourcesFaults = set ? startDbFaults(set, { ...DB_FAULTS, first: "sigkill" }) : undefined;
const partitions: Partitions | undefined = set && network ? await startPartitions(network, set, (stack as ChaosCluster).cluster, PARTITIONS) : undefined;
const history = new History(HISTORY_FILE);
// The rolling upgrade (upgrade.ts) begins once the load runs; the load goes on at least until every process is replaced.
const upgrade = upgradeFrom
  ? startRollingUpgrade((stack as ChaosCluster).cluster, {
      from: upgradeFrom,
      rollback: UPGRADE!.rollback,
      databaseUri: stack.databaseUri,
      databaseName: stack.databaseName,
      startAfterMs: 10_000,
    })
  : undefined;
if (upgradeFrom)
  log(
    `rolling upgrade from ${upgradeFrom.release} (${upgradeFrom.commit.slice(0, 12)})${UPGRADE!.rollback ? ", then a rollback to it" : ""}, beginning in 10 s`,
  );
// The cluster takes a while to start: its load gets its deadline from now.
const load = startLoad(api, {
  total: TOTAL,
  concurrency: CONCURRENCY,
  deadline: CLUSTER ? Date.now() + CLUSTER_DEADLINE_MS : startedAt + DEADLINE_MS,
  updatesOf,
  history,
  ...(upgrade ? { more: () => upgrade.running() } : {}),
});
const readers = startReaders(api, history, READERS);
const { outcomes } = load;
const { received } = receiver;
const progress = setInterval(() => {
  const { kills } = killer;
  log(
    `${outcomes.ok}/${outcomes.creates} created, ${outcomes.updated} updates acknowledged, ${outcomes.retries} retries, ${received.answered2xx.size} ` +
      `events delivered, SIGKILLs core ${kills.core} gateway ${kills.gateway} workers ${kills.worker}, core crash-after-write ` +
      [
        stack.selfCrashes(),
        elections ? `, database faults ${resourcesFaults?.faults.length ?? 0}, elections seen ${elections.elections()}` : "",
        partitions ? `, partitions ${partitions.partitions.length}` : "",
        `, history ${history.ops.length} operations`,
      ].join(""),
  );
}, 10_000);
await load.done;
const upgraded = upgrade ? await upgrade.done : undefined;
await readers.stop();
clearInterval(progress);
const kills = await killer.stop();
if (resourcesFaults) {
  await resourcesFaults.stop();
  dbFaults.push(...resourcesFaults.faults);
}
await partitions?.stop();

// Settle: core and workers stay up (their supervisors restart them if a kill landed last) until no document
// has an event left in its outbox and no event waits for a delivery, or the bound passes.
const state = await StoredState.open(stack.databaseUri, stack.databaseName);
const left = await settle(api, state, { account: accountId, webhooks: true, boundMs: SETTLE_MS });
log(`settled in ${left.seconds.toFixed(1)}s; documents with pending events: ${left.outboxes}, events waiting for a delivery: ${left.awaitingWebhooks}`);
// The final state for the checker, read once the faults have ended, then the verdict on the whole history.
const finals = await finalReads(api, history);
await history.close();
const verdict = check(history.ops);
log(
  `history: ${verdict.operations} operations in ${HISTORY_FILE}; checker: ` +
    `${verdict.ok ? "no anomaly" : JSON.stringify(Object.fromEntries(Object.entries(verdict.anomalies).filter(([, n]) => n > 0)))}`,
);
// The jobs phase: an import and a bulk update run by the same workers, SIGKILLed at random; core and gateway
// stay up. A fresh account, so its 20,000 events do not all go to the receiver.
const jobsFaults = set ? startDbFaults(set, { ...DB_FAULTS, first: "sigstop" }) : undefined;
const jobs = await runJobsPhase(stack, state, JOB_ITEMS);
if (jobsFaults) {
  await jobsFaults.stop();
  dbFaults.push(...jobsFaults.faults);
}
// The files phase: a large import from an uploaded file and an export of it, workers SIGKILLed as in the jobs phase
// (with the database's faults too under `--cluster`).
const filesFaults = set && FILE_ROWS > 0 ? startDbFaults(set, { ...DB_FAULTS, first: "sigkill" }) : undefined;
const files = FILE_ROWS > 0 ? await runFilesPhase(stack, FILE_ROWS) : null;
if (filesFaults) {
  await filesFaults.stop();
  dbFaults.push(...filesFaults.faults);
}
// Counted through the running stack's API, after the jobs phase (late deliveries to the receiver included).
const counts = await countResourcesPhase({ api, state, account: accountId, outcomes, received, documentsWithPendingEvents: left.outboxes });
// The cluster's own counts: elections, and what the members rolled back (none of it acknowledged).
let clusterCounts: Record<string, unknown> | undefined;
let clusterOk = true;
if (set && elections) {
  const rollbacks = await countRollbacks(set, stack.databaseName, outcomes.acknowledgedIds);
  const withoutNewPrimary = dbFaults.filter((f) => f.next_primary === null).length;
  clusterCounts = {
    elections_seen: elections.elections(),
    election_terms: await elections.terms(),
    primary_sigkills: dbFaults.filter((f) => f.fault === "sigkill").length,
    primary_sigstops: dbFaults.filter((f) => f.fault === "sigstop").length,
    faults_without_new_primary: withoutNewPrimary,
    rollback_files: rollbacks.files,
    rollback_documents: rollbacks.documents,
    rollback_documents_by_collection: rollbacks.documentsByCollection,
    rollback_acknowledged_lost: rollbacks.acknowledgedLost,
    rollback_acknowledged_present_now: rollbacks.acknowledgedPresent,
    partitions: partitions?.partitions ?? "none: not possible here (see the log)",
    process_restarts: (stack as ChaosCluster).cluster.restarts(),
    db_faults: dbFaults,
  };
  clusterOk =
    rollbacks.acknowledgedLost === 0 && withoutNewPrimary === 0 && dbFaults.some((f) => f.fault === "sigkill") && dbFaults.some((f) => f.fault === "sigstop");
  await elections.stop();
}

// The noisy-neighbour phase (`CHAOS_NOISY=0` skips it; `--cluster` too, whose faults are the database's): one
// account floods its job queue while another's jobs wait only for a slot (noisy-jobs.ts); then one account's dead
// endpoints hold a backlog while another account runs the normal load, whose delivery lag is measured
// (noisy-deliveries-phase.ts).
const noisyEnabled = config.noisy;
const noisyJobs = noisyEnabled ? await runNoisyJobs(stack) : null;
const noisyDeliveries = noisyEnabled ? await runNoisyDeliveriesPhase(stack, state, { items: NOISY_ITEMS, creates: NOISY_CREATES }) : null;
api.close();
await state.close();
await stack.stopProcesses();
await network?.close();
await stack.close();
await receiver.close();

printReport(
  resourcesReport({ expected: outcomes.creates, counts, outcomes, received, kills, coreCrashes: stack.selfCrashes(), seconds: Math.round(elapsedSeconds()) }),
  jobsReport(jobs),
  {
    ...(noisyJobs && noisyDeliveries ? { noisy_neighbour: { jobs: noisyJobsReport(noisyJobs), deliveries: noisyDeliveriesReport(noisyDeliveries) } } : {}),
    ...(files ? { files } : {}),
    ...(clusterCounts ? { cluster: clusterCounts } : {}),
    ...(upgraded ? { upgrade: upgraded } : {}),
    history: {
      file: HISTORY_FILE,
      weakened: WEAKEN,
      readers: READERS,
      reader_operations: readers.done(),
      final_walk: finals.walked,
      final_reads: finals.read,
      ...verdict,
    },
  },
);
const noisyOk = !noisyJobs || !noisyDeliveries || (noisyJobsOk(noisyJobs) && noisyDeliveries.undelivered === 0);
const upgradeOk = !upgraded || upgraded.error === null;
process.exit(counts.ok && jobs.counts.ok && (files?.ok ?? true) && noisyOk && clusterOk && upgradeOk && verdict.ok ? 0 : 1);
