// The printed report of `npm run chaos`: one JSON object on stdout, the resources phase's counts with the
// load's and the kills' figures, and the jobs phase's under `jobs` (docs/events.md, docs/jobs.md).
import type { ResourcesPhaseCounts } from "./invariants.js";
import type { JobsPhase } from "./jobs-phase.js";
import type { LoadOutcomes } from "./load.js";
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

/** One JSON object: the resources phase's counts, the jobs phase's under `jobs`, and with `--cluster` the cluster's under `cluster`. */
export function printReport(resources: Record<string, unknown>, jobs: Record<string, unknown>, cluster?: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ ...resources, jobs, ...(cluster ? { cluster } : {}) }, null, 2)}\n`);
}
