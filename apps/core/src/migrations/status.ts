import type { Db } from "mongodb";
import { migrationLeaseHolder, type LeaseHolder } from "./lease.js";
import { recordsById, type MigrationRecord } from "./records.js";
import { compareReleases, type MigrationStep, type StepKind, type StepPosition } from "./step.js";
import { MIGRATION_STEPS } from "./steps/index.js";

/** The first release; it ran no migrations (its start-time work is what steps 0001 on do again). */
export const FIRST_RELEASE = "1.4.0";

/** One step as `rms migrate status` shows it: this release's steps, and any a later release recorded. */
export interface StepStatus {
  readonly id: string;
  readonly release: string;
  readonly kind: StepKind;
  readonly summary: string;
  readonly state: "pending" | "running" | "done";
  /** False for a step a later release ran, which this release does not know. */
  readonly known: boolean;
  readonly startedAt: Date | null;
  readonly finishedAt: Date | null;
  readonly finishedByRelease: string | null;
  readonly batches: number;
  readonly changed: number;
  readonly position: StepPosition | null;
  readonly error: string | null;
}

export interface MigrationStatus {
  readonly steps: readonly StepStatus[];
  /** Who holds the migration lease now (a run in progress), if anyone. */
  readonly lease: LeaseHolder | null;
  /**
   * The oldest release that may run on this data again: the release of the latest contract step that has begun, or
   * the first release when only expand steps have run (a rollback to any release since is safe).
   */
  readonly rollbackFloor: string;
  /** The contract steps that have begun (each one sets the floor at its release). */
  readonly contracts: readonly string[];
}

/** The state of every step in the database, joined with the steps this release knows. */
export async function migrationStatus(db: Db, steps: readonly MigrationStep[] = MIGRATION_STEPS): Promise<MigrationStatus> {
  const records = await recordsById(db);
  const known = new Set(steps.map((step) => step.id));
  const later = [...records.values()].filter((record) => !known.has(record._id));
  const rows = [...steps.map((step) => statusOf(step, records.get(step.id), true)), ...later.map((record) => statusOf(record, record, false))];
  rows.sort((a, b) => a.id.localeCompare(b.id));
  const contracts = [...records.values()].filter((record) => record.kind === "contract");
  const rollbackFloor = contracts.reduce((floor, record) => (compareReleases(record.release, floor) > 0 ? record.release : floor), FIRST_RELEASE);
  return { steps: rows, lease: await migrationLeaseHolder(db), rollbackFloor, contracts: contracts.map((record) => record._id).sort() };
}

/** A step as this release declares it, or as the record of a step it does not know keeps it. */
type Declared = Pick<MigrationStep, "id" | "release" | "kind" | "summary"> | MigrationRecord;

function statusOf(step: Declared, record: MigrationRecord | undefined, known: boolean): StepStatus {
  return {
    id: "id" in step ? step.id : step._id,
    release: step.release,
    kind: step.kind,
    summary: step.summary,
    state: record?.state ?? "pending",
    known,
    startedAt: record?.started_at ?? null,
    finishedAt: record?.finished_at ?? null,
    finishedByRelease: record?.finished_by_release ?? null,
    batches: record?.batches ?? 0,
    changed: record?.changed ?? 0,
    position: record && record.state === "running" ? record.position : null,
    error: record?.error ?? null,
  };
}

/** What each step not done yet would change, read without writing anything (`rms migrate up --dry-run`). */
export interface StepPlan {
  readonly id: string;
  readonly kind: StepKind;
  readonly summary: string;
  readonly state: "pending" | "running";
  /** One line per part with work left; empty when the step would find nothing to change (it is still recorded). */
  readonly changes: readonly string[];
}

export async function planMigrations(db: Db, steps: readonly MigrationStep[] = MIGRATION_STEPS): Promise<StepPlan[]> {
  const records = await recordsById(db);
  const plans: StepPlan[] = [];
  for (const step of steps) {
    const record = records.get(step.id);
    if (record?.state === "done") continue;
    const changes: string[] = [];
    for (const part of step.parts) {
      const line = await part.pending(db);
      if (line) changes.push(line);
    }
    plans.push({ id: step.id, kind: step.kind, summary: step.summary, state: record ? "running" : "pending", changes });
  }
  return plans;
}
