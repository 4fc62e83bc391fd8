// The whole public face of @rms/test-db.
export { startDatabase, describeDatabase, DatabaseStartError, ENGINES, type Engine, type RunningDatabase, type StartOptions } from "./start.js";
export { WHEEL, wheelDirectory } from "./pypi-wheel.js";
export { REPLICA_SET } from "./replica-set.js";
export { testDatabaseName } from "./names.js";
export { cacheDir, type Env } from "./cache.js";
export { withLock } from "./lock.js";
export { startReplicaSet, type ReplicaSetMember, type ReplicaSetOptions, type RunningReplicaSet } from "./replica-set-members.js";
export { freePort } from "./ports.js";
