// The public face of @rms/core: start the service in-process (tests, the launcher).
export { startCore, type CoreOptions, type RunningCore } from "./server.js";
export { parseCoreConfig, ConfigError, type CoreConfig } from "./config.js";
