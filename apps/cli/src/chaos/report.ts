// The printed report of `npm run chaos`: one JSON object on stdout, the resources phase's counts with the
// load's and the kills' figures, the jobs phase's under `jobs` (docs/events.md, docs/jobs.md) and the noisy
// neighbour's under `noisy_neighbour.deliveries` (docs/webhooks.md), its jobs part under `noisy_neighbour.jobs` (docs/jobs.md).
import { repeatedDeliveries } from "./duplicates.js";
import type { ResourcesPhaseCounts } from "./invariants.js";
import type { JobsPhase } from "./jobs-phase.js";
import type { LoadOutcomes } from "./load.js";
import { faultTimeline } from "./log.js";
import type { NoisyDeliveriesPhase } from "./noisy-deliveries-phase.js";
import type { Received } from "./receiver.js";
import type { ProcessKind } from "./stack.js";

export interface ResourcesPhaseReport {
  expected: number;
  counts: ResourcesPhaseCounts;
  outcomes: LoadOutcomes;
  received: Received;
  kills: Record<ProcessKind, number>;
  coreCrashes: number;
  seconds: number;
}

export function resourcesReport(phase: ResourcesPhaseReport): Record<string, unknown> {
  const { counts, outcomes, received, kills } = phase;
  const repeats = repeatedDeliveries(received.answered2xx, faultTimeline);
  return {
    resources_expected: phase.expected,
    resources_found: counts.found,
    duplicates: counts.duplicates,
    lost: counts.lost,
    acknowledged: outcomes.ok,
    updates_acknowledged: outcomes.updated,
    changes: counts.changes,
    events: counts.events,
    missing_events: counts.missingEvents,
    duplicate_events: counts.duplicateEvents,
    documents_with_pending_events: counts.documentsWithPendingEvents,
    deliveries: counts.deliveries,
    undelivered: counts.undelivered,
    duplicate_deliveries: counts.duplicateDeliveries,
    // What each repeat is laid to (duplicates.ts): the last fault before its first answer's record was due.
    duplicate_deliveries_by_fault: repeats.by_fault,
    duplicate_deliveries_seconds_to_repeat: repeats.seconds_to_repeat,
    events_with_pending_webhooks: counts.eventsWithPendingWebhooks,
    delivery_requests: received.requests,
    delivery_requests_refused_by_receiver: received.refused,
    delivery_requests_unverified: received.unverified,
    delivery_documents_by_status: counts.deliveryDocumentsByStatus,
    unfinished_at_deadline: outcomes.gaveUp,
    client_retries: outcomes.retries,
    failed_attempts_by_status: outcomes.failures,
    sigkill_core: kills.core,
    sigkill_gateway: kills.gateway,
    sigkill_workers: kills.worker,
    core_crash_after_write: phase.coreCrashes,
    seconds: phase.seconds,
  };
}

export function jobsReport(phase: JobsPhase): Record<string, unknown> {
  const { counts } = phase;
  return {
    import_status: phase.imported.status,
    import_attempts: phase.imported.attempts,
    bulk_update_status: phase.updated.status,
    bulk_update_attempts: phase.updated.attempts,
    resources_expected: phase.items,
    resources_found: counts.found,
    duplicate_resources: counts.duplicates,
    updates_applied_twice: counts.updatesAppliedTwice,
    updates_missing: counts.updatesMissing,
    events: counts.events,
    missing_events: counts.missingEvents,
    duplicate_events: counts.duplicateEvents,
    documents_with_pending_events: counts.documentsWithPendingEvents,
    sigkill_worker: phase.workerKills,
    seconds: phase.seconds,
  };
}

/** The noisy-neighbour phase of deliveries: the other account's delivery lag beside the dead endpoints' backlog. */
export function noisyDeliveriesReport(phase: NoisyDeliveriesPhase): Record<string, unknown> {
  return {
    dead_endpoints: phase.deadEndpoints,
    backlog_items: phase.backlogItems,
    dead_deliveries_pending: phase.pendingForDeadAtStart,
    other_account_creates: phase.creates,
    other_account_deliveries: phase.delivered,
    other_account_lag_p50_ms: phase.lagP50Ms,
    other_account_lag_p99_ms: phase.lagP99Ms,
    other_account_lag_max_ms: phase.lagMaxMs,
    // The same load just before the backlog: the machine's own lag for it, and the ratio of p99s.
    baseline_lag_p50_ms: phase.baseline.lagP50Ms,
    baseline_lag_p99_ms: phase.baseline.lagP99Ms,
    lag_p99_vs_baseline: Math.round((phase.lagP99Ms / Math.max(phase.baseline.lagP99Ms, 1)) * 100) / 100,
    // CONTRACT.md section 7's bound (stated for one worker): informational here, not a pass condition.
    other_account_lag_p99_within_5s: phase.lagP99Ms < 5_000,
    other_account_undelivered: phase.undelivered,
    seconds: phase.seconds,
  };
}

/** `more`: the sections of further phases (the noisy-neighbour phase's `noisy_neighbour`, with `--cluster` the cluster's `cluster`). */
export function printReport(resources: Record<string, unknown>, jobs: Record<string, unknown>, more: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ ...resources, jobs, ...more }, null, 2)}\n`);
}
