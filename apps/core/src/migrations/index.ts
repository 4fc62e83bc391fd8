// Migrations: the one way stored data changes (docs/migrations.md). What core's start, the worker's and `rms migrate` use.
export { migrate, MigrationError, DEFAULT_BATCH_SIZE, DEFAULT_LEASE_MS, type MigrateOptions, type MigrateResult, type MigrationLogger } from "./run.js";
export { migrationStatus, planMigrations, FIRST_RELEASE, type MigrationStatus, type StepPlan, type StepStatus } from "./status.js";
export { MIGRATIONS_COLLECTION, type MigrationRecord } from "./records.js";
export { MIGRATION_LEASE_COLLECTION } from "./lease.js";
export { compareReleases, type MigrationStep, type StepKind, type StepPart, type StepPosition } from "./step.js";
export { MIGRATION_STEPS } from "./steps/index.js";
