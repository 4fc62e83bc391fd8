// Configuration primitives: each kind of value has one rule and one message, whichever process reads it;
// and the one lifecycle of an entry point (configuration, start, stop on a signal or the launcher's end).
export { ConfigError, parseEnvironment } from "./environment.js";
export { RELEASE } from "./release.js";
export {
  EXIT_CONFIG,
  EXIT_FAILED,
  EXIT_STOPPED,
  runProcess,
  type LifecycleLogger,
  type ProcessDefinition,
  type ProcessHost,
  type Stoppable,
} from "./process.js";
export {
  address,
  databaseName,
  filePath,
  ipList,
  isLoopbackAddress,
  logLevel,
  LOG_LEVELS,
  mongoUri,
  port,
  positiveInt,
  byteCount,
  rateLimitStore,
  token,
  TOKEN_MIN_CHARS,
  type LogLevel,
} from "./values.js";
