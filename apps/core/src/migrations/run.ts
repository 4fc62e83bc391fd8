import { isDuplicateKeyError } from "@rms/proto";
import type { Db } from "mongodb";
import { claimMigrationLease, migrationLeaseHolder, type HeldLease } from "./lease.js";
import { migrationRecords, pendingSteps, type MigrationRecord } from "./records.js";
import { compareReleases, START, type MigrationStep, type StepPosition } from "./step.js";
import { MIGRATION_STEPS } from "./steps/index.js";

/** The lines a run logs (a pino logger fits). */
export interface MigrationLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface MigrateOptions {
  /** Who runs them, unique per process (`core host:pid`): the lease's owner, recorded with each run. */
  readonly owner: string;
  /** The release of the process that runs them. */
  readonly release: string;
  readonly logger: MigrationLogger;
  /** The steps to run (every step of this release, `steps/index.ts`, by default). */
  readonly steps?: readonly MigrationStep[];
  /** How long the lease holds without renewal: a holder that dies frees it after this (default 10 s). */
  readonly leaseMs?: number;
  /** Documents per batch (default 500). */
  readonly batchSize?: number;
  /** How often a process waiting for another's run looks again (default 250 ms). */
  readonly pollMs?: number;
  /** Called after each batch's progress is recorded (tests stop a run there, as a crash between batches would). */
  readonly afterBatch?: (step: MigrationStep, position: StepPosition) => Promise<void> | void;
}

export const DEFAULT_LEASE_MS = 10_000;
export const DEFAULT_BATCH_SIZE = 500;
const DEFAULT_POLL_MS = 250;

/** What a process's call of `migrate` did: the steps it ran (or finished), and whether it waited for another's run. */
export interface MigrateResult {
  readonly ran: readonly string[];
  readonly waited: boolean;
}

/** A migration failure with a code (`rms migrate` and a core's start report it as it is). */
export class MigrationError extends Error {
  constructor(
    readonly code: "lease_lost" | "newer_contract" | "step_failed",
    message: string,
  ) {
    super(message);
    this.name = "MigrationError";
  }
}

/**
 * Brings the database to this release's steps before the process serves (docs/migrations.md): every step not done
 * runs, in order, under the one migration lease; a process that finds the lease held waits until the holder has
 * done them (or, if the holder dies, takes the lease over once it runs out and resumes where it stopped). Then it
 * refuses to go on if a contract step of a later release has run: this release cannot read what that removed.
 */
export async function migrate(db: Db, options: MigrateOptions): Promise<MigrateResult> {
  const steps = options.steps ?? MIGRATION_STEPS;
  const ran: string[] = [];
  let waited = false;
  for (;;) {
    const pending = await pendingSteps(db, steps);
    if (pending.length === 0) break;
    const lease = await claimMigrationLease(db, options.owner, options.release, options.leaseMs ?? DEFAULT_LEASE_MS);
    if (!lease) {
      if (!waited) {
        const holder = await migrationLeaseHolder(db);
        options.logger.info({ holder: holder?.owner ?? null, steps: pending.map((step) => step.id) }, "migrations: waiting for another process's run");
      }
      waited = true;
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? DEFAULT_POLL_MS));
      continue;
    }
    try {
      // Read again under the lease: a holder before may have done some since.
      for (const step of await pendingSteps(db, steps)) {
        if (await runStep(db, step, lease, options)) ran.push(step.id);
      }
    } catch (error) {
      if (!(error instanceof MigrationError && error.code === "lease_lost")) throw error;
      options.logger.warn({ owner: options.owner }, "migrations: lease lost to another process; waiting for its run");
      waited = true;
    } finally {
      await lease.release();
    }
  }
  await refuseNewerContracts(db, options.release);
  return { ran, waited };
}

/** Runs (or resumes) one step under the lease; false when it was done already. */
async function runStep(db: Db, step: MigrationStep, lease: HeldLease, options: MigrateOptions): Promise<boolean> {
  const records = migrationRecords(db);
  const begun = await begin(db, step, lease, options);
  if (!begun) return false;
  let position = begun.position;
  const resumed = position.part > 0 || position.after !== null;
  options.logger.info({ step: step.id, kind: step.kind, ...(resumed ? { from: position } : {}) }, resumed ? "migration: resuming" : "migration: starting");
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  while (position.part < step.parts.length) {
    if (lease.lost) throw new MigrationError("lease_lost", "the migration lease was taken over");
    let batch: { after: unknown; changed: number };
    try {
      batch = await step.parts[position.part]!.batch(db, position.after, batchSize);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      await records.updateOne({ _id: step.id, epoch: lease.epoch }, { $set: { error: message, updated_at: new Date() } }).catch(() => undefined);
      throw new MigrationError("step_failed", `migration ${step.id} failed: ${message}`);
    }
    position = batch.after === null ? { part: position.part + 1, after: null } : { part: position.part, after: batch.after };
    const kept = await records.updateOne(
      { _id: step.id, epoch: lease.epoch, state: "running" },
      { $set: { position, updated_at: new Date() }, $inc: { batches: 1, changed: batch.changed } },
    );
    if (kept.matchedCount === 0) throw new MigrationError("lease_lost", "the migration lease was taken over");
    await options.afterBatch?.(step, position);
  }
  const finished = new Date();
  const done = await records.updateOne(
    { _id: step.id, epoch: lease.epoch, state: "running" },
    { $set: { state: "done", finished_at: finished, finished_by_release: options.release, updated_at: finished }, $unset: { error: "" } },
  );
  if (done.matchedCount === 0) throw new MigrationError("lease_lost", "the migration lease was taken over");
  const record = await records.findOne({ _id: step.id });
  options.logger.info({ step: step.id, batches: record?.batches, changed: record?.changed }, "migration: done");
  return true;
}

/**
 * The step's record under this lease's epoch: made at its first start, or taken over from the run before (whose
 * position it keeps, so the step resumes there). Null when it is done already.
 */
async function begin(db: Db, step: MigrationStep, lease: HeldLease, options: MigrateOptions): Promise<MigrationRecord | null> {
  const records = migrationRecords(db);
  const now = new Date();
  const run = (from: StepPosition) => ({ owner: options.owner, release: options.release, epoch: lease.epoch, at: now, from });
  const fresh: MigrationRecord = {
    _id: step.id,
    release: step.release,
    kind: step.kind,
    summary: step.summary,
    state: "running",
    started_at: now,
    updated_at: now,
    position: START,
    batches: 0,
    changed: 0,
    epoch: lease.epoch,
    runs: [run(START)],
  };
  try {
    await records.insertOne(fresh);
    return fresh;
  } catch (error) {
    if (!isDuplicateKeyError(error)) throw error;
  }
  const existing = await records.findOne({ _id: step.id });
  if (!existing || existing.state === "done") return null;
  const taken = await records.findOneAndUpdate(
    { _id: step.id, state: "running", epoch: { $lt: lease.epoch } },
    { $set: { epoch: lease.epoch, updated_at: now }, $push: { runs: { $each: [run(existing.position)], $slice: -20 } } },
    { returnDocument: "after" },
  );
  if (!taken) throw new MigrationError("lease_lost", "the migration lease was taken over");
  return taken;
}

/** Throws when a contract step of a release after `release` has run: what it removed, this release still reads. */
async function refuseNewerContracts(db: Db, release: string): Promise<void> {
  const contracts = await migrationRecords(db)
    .find({ kind: "contract" }, { projection: { _id: 1, release: 1 } })
    .toArray();
  const newer = contracts.filter((record) => compareReleases(record.release, release) > 0);
  if (newer.length === 0) return;
  const names = newer.map((record) => `${record._id} (${record.release})`).join(", ");
  throw new MigrationError("newer_contract", `release ${release} cannot run on this database: contract step ${names} has run (docs/migrations.md, "Rollback")`);
}
