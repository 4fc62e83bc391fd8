// Configuration primitives: each kind of value has one rule and one message, whichever process reads it.
export { ConfigError, parseEnvironment } from "./environment.js";
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
  rateLimitStore,
  token,
  TOKEN_MIN_CHARS,
  type LogLevel,
} from "./values.js";
