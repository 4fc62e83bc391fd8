// The whole public face of @rms/test-db.
export { startDatabase, ENGINES, type Engine, type RunningDatabase, type StartOptions } from "./start.js";
export { ensureFerretDb, FERRETDB_VERSIONS, type FerretDbBinary } from "./ferretdb.js";
export { ensureMongoJavaServer, MONGO_JAVA_SERVER_VERSION, type MongoJavaServer } from "./mongo-java-server.js";
export { testDatabaseName } from "./names.js";
export { cacheDir, type Env } from "./cache.js";
