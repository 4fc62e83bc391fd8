// The whole public face of @rms/test-db.
export { startDatabase, type Engine, type RunningDatabase, type StartOptions } from "./start.js";
export { ensureFerretDb, FERRETDB_VERSIONS, type FerretDbBinary } from "./ferretdb.js";
export { testDatabaseName } from "./names.js";
export { cacheDir } from "./cache.js";
