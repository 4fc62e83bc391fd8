import { hostname } from "node:os";
import { RELEASE } from "@rms/config";
import { migrate, migrationStatus, openDatabaseClient, planMigrations } from "@rms/core";
import type { MigrationLogger, MigrationStatus, StepPlan, StepStatus } from "@rms/core";
import type { Db } from "mongodb";
import { checkDatabaseEnvironment } from "./config.js";

/** Where `rms migrate` writes (the CLI's standard output). */
export interface MigrateOutput {
  readonly env: Record<string, string | undefined>;
  readonly stdout: (text: string) => void;
}

/**
 * `rms migrate ...` talks to the database itself (MONGODB_URI, MONGODB_DATABASE), not to a core: it is how an
 * operator looks at and runs the steps before any core of the new release starts, or while none runs.
 */
async function withDatabase<T>(out: MigrateOutput, use: (db: Db, name: string) => Promise<T>): Promise<T> {
  const { mongoUri, databaseName } = checkDatabaseEnvironment(out.env);
  const client = openDatabaseClient(mongoUri);
  try {
    await client.connect();
    return await use(client.db(databaseName), databaseName);
  } finally {
    await client.close();
  }
}

/** `rms migrate status`: every step with its state, who holds the lease, and how far back a rollback may go. */
export async function migrateStatus(out: MigrateOutput, json: boolean): Promise<void> {
  await withDatabase(out, async (db, name) => {
    const status = await migrationStatus(db);
    if (json) return out.stdout(`${JSON.stringify(statusJson(status, name))}\n`);
    out.stdout(`rms ${RELEASE}, database ${name}: ${status.steps.filter((s) => s.state === "done").length} of ${status.steps.length} steps done\n`);
    for (const step of status.steps) out.stdout(`${stepLine(step)}\n`);
    const { lease } = status;
    out.stdout(`lease: ${lease ? `held by ${lease.owner} (${lease.release ?? "?"}) until ${new Date(lease.until).toISOString()}` : "free"}\n`);
    out.stdout(`${rollbackLine(status)}\n`);
  });
}

/** `rms migrate up [--dry-run]`: runs the steps not done yet under the lease (as a core's start does), or shows them. */
export async function migrateUp(out: MigrateOutput, options: { dryRun: boolean; json: boolean }): Promise<void> {
  await withDatabase(out, async (db, name) => {
    if (options.dryRun) {
      const plans = await planMigrations(db);
      const plan = { object: "migration_plan", release: RELEASE, database: name, dry_run: true, steps: plans.map(planJson) };
      if (options.json) return out.stdout(`${JSON.stringify(plan)}\n`);
      out.stdout(`rms ${RELEASE}, database ${name}: ${plans.length === 0 ? "every step is done, nothing to run" : `${plans.length} step(s) to run`}\n`);
      for (const plan of plans) {
        out.stdout(`${plan.id}  ${plan.kind}  ${plan.state}: ${plan.summary}\n`);
        for (const change of plan.changes.length > 0 ? plan.changes : ["nothing to change (recorded as done when run)"]) out.stdout(`  ${change}\n`);
      }
      out.stdout("dry run: nothing was changed\n");
      return;
    }
    const logger: MigrationLogger = {
      info: (fields, message) => out.stdout(options.json ? `${JSON.stringify({ msg: message, ...fields })}\n` : `${message} ${JSON.stringify(fields)}\n`),
      warn: (fields, message) => out.stdout(options.json ? `${JSON.stringify({ msg: message, ...fields })}\n` : `${message} ${JSON.stringify(fields)}\n`),
    };
    const result = await migrate(db, { owner: `rms ${hostname()}:${process.pid}`, release: RELEASE, logger });
    const summary = result.ran.length === 0 ? (result.waited ? "done by another process" : "every step was done already") : `${result.ran.length} step(s) run`;
    out.stdout(
      options.json
        ? `${JSON.stringify({ object: "migration_result", release: RELEASE, database: name, ran: result.ran, waited: result.waited })}\n`
        : `migrated ${name} to ${RELEASE}: ${summary}\n`,
    );
  });
}

function stepLine(step: StepStatus): string {
  const head = `${step.id.padEnd(36)} ${step.kind.padEnd(8)} ${step.release.padEnd(7)} ${step.state.padEnd(8)}`;
  const counts = `${step.batches} batch(es), ${step.changed} changed`;
  const later = step.known ? "" : " (a later release's step)";
  if (step.state === "done") return `${head} ${step.finishedAt?.toISOString()} by ${step.finishedByRelease} (${counts})${later}`;
  const error = step.error ? `; last error: ${step.error}` : "";
  if (step.state === "running") return `${head} ${counts}, next at part ${step.position?.part} after ${JSON.stringify(step.position?.after)}${error}${later}`;
  return `${head} ${step.summary}`;
}

function rollbackLine(status: MigrationStatus): string {
  if (status.contracts.length === 0) return `rollback: safe to any release from ${status.rollbackFloor} (only expand steps have run)`;
  return `rollback: not before ${status.rollbackFloor} (contract step(s) ${status.contracts.join(", ")} have run)`;
}

function statusJson(status: MigrationStatus, database: string) {
  return {
    object: "migration_status",
    release: RELEASE,
    database,
    steps: status.steps.map((step) => ({
      id: step.id,
      release: step.release,
      kind: step.kind,
      state: step.state,
      known: step.known,
      summary: step.summary,
      started_at: step.startedAt?.toISOString() ?? null,
      finished_at: step.finishedAt?.toISOString() ?? null,
      finished_by_release: step.finishedByRelease,
      batches: step.batches,
      changed: step.changed,
      position: step.position,
      error: step.error,
    })),
    lease: status.lease && { owner: status.lease.owner, release: status.lease.release, until: new Date(status.lease.until).toISOString() },
    rollback_floor: status.rollbackFloor,
    contracts: status.contracts,
  };
}

function planJson(plan: StepPlan) {
  return { id: plan.id, kind: plan.kind, state: plan.state, summary: plan.summary, changes: plan.changes };
}
