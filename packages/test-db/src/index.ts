// The whole public face of @rms/test-db.
export { startDatabase, describeDatabase, DatabaseStartError, ENGINES, type Engine, type RunningDatabase, type StartOptions } from "./start.js";
export { ensureMongoJavaServer, MONGO_JAVA_SERVER_VERSION, MONGO_JAVA_SERVER_HEAP, type MongoJavaServer, type MongoJavaServerStorage } from "./mongo-java-server.js";
export { testDatabaseName } from "./names.js";
export { cacheDir, type Env } from "./cache.js";
