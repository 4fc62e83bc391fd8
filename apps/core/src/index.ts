// The public face of @rms/core: start the service in-process (tests, the launcher).
export { startCore, type CoreOptions, type RunningCore } from "./server.js";
export { parseCoreConfig, ConfigError, type CoreConfig } from "./config.js";
export { startWorker, type RunningWorker, type WorkerOptions } from "./worker/run.js";
export { parseWorkerConfig, type WorkerConfig } from "./worker/config.js";
export { settingsVariables, DEFAULT_SETTINGS, type CoreSettings } from "./settings.js";
export {
  migrate,
  migrationStatus,
  planMigrations,
  compareReleases,
  MigrationError,
  MIGRATION_STEPS,
  MIGRATIONS_COLLECTION,
  FIRST_RELEASE,
  type MigrateOptions,
  type MigrateResult,
  type MigrationLogger,
  type MigrationStatus,
  type MigrationStep,
  type StepPlan,
  type StepStatus,
} from "./migrations/index.js";
// The database client every core process opens (majority, journaled writes; a URI weakening them is refused).
export { openClient as openDatabaseClient } from "./storage/client-options.js";
// What an upload holds in core between its gRPC stream and MongoDB (the gateway's tests count the bytes in flight).
export { STREAMED_WRITE_BYTES_HELD } from "./storage/byte-store.js";
