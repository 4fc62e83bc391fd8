// The public face of @rms/core: start the service in-process (tests, the launcher).
export { startCore, type CoreOptions, type RunningCore } from "./server.js";
export { parseCoreConfig, ConfigError, type CoreConfig } from "./config.js";
export { startWorker, type RunningWorker, type WorkerOptions } from "./worker/run.js";
export { parseWorkerConfig, type WorkerConfig } from "./worker/config.js";
export { settingsVariables, DEFAULT_SETTINGS, type CoreSettings } from "./settings.js";
