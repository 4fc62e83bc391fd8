import type { Collection, Db } from "mongodb";
import type { MigrationStep, StepKind, StepPosition } from "./step.js";

/** One document per step that has begun: what it is, how far it got, when, and which release ran it. */
export const MIGRATIONS_COLLECTION = "migrations";

/** One start or resumption of a step, by the holder of the lease's epoch. */
export interface StepRun {
  readonly owner: string;
  readonly release: string;
  readonly epoch: number;
  readonly at: Date;
  /** Where it began: the start, or where a run before it stopped. */
  readonly from: StepPosition;
}

export interface MigrationRecord {
  /** The step's id (`0003-...`). */
  _id: string;
  /** The step as its release declared it, so a release that does not know it still knows what it was. */
  release: string;
  kind: StepKind;
  summary: string;
  state: "running" | "done";
  started_at: Date;
  updated_at: Date;
  finished_at?: Date;
  /** The release of the process that finished it. */
  finished_by_release?: string;
  /** Where its next batch begins. */
  position: StepPosition;
  batches: number;
  /** Documents (or indexes) changed, over every run. */
  changed: number;
  /** The lease epoch of the run that writes it now: a run of an older epoch (its lease taken over) writes nothing. */
  epoch: number;
  /** Its last 20 starts and resumptions. */
  runs: StepRun[];
  /** The last failure of a batch, until the step is done. */
  error?: string;
}

export function migrationRecords(db: Db): Collection<MigrationRecord> {
  return db.collection<MigrationRecord>(MIGRATIONS_COLLECTION);
}

/** Every step's record, by id. */
export async function recordsById(db: Db): Promise<Map<string, MigrationRecord>> {
  const records = await migrationRecords(db).find({}).toArray();
  return new Map(records.map((record) => [record._id, record]));
}

/** The steps of `steps` not done yet, in order. */
export async function pendingSteps(db: Db, steps: readonly MigrationStep[]): Promise<MigrationStep[]> {
  const done = new Set(
    (
      await migrationRecords(db)
        .find({ state: "done" }, { projection: { _id: 1 } })
        .toArray()
    ).map((record) => record._id),
  );
  return steps.filter((step) => !done.has(step.id));
}
