// The public face of @rms/gateway: the Express app and the servers around it.
export { createGatewayApp, OPERATIONS, type GatewayDeps } from "./app.js";
export { startGateway, SERVER_LIMITS, type RunningGateway, type StartOptions } from "./server.js";
export { parseGatewayConfig, ConfigError, type GatewayConfig } from "./config.js";
export { connectCore, type CoreClients, type ServingStatus } from "./core.js";
export { ApiError, httpStatusOf, fromCoreError, type ErrorCode, type ErrorType } from "./errors.js";
export { developmentCertificate, loadTls } from "./transport/tls.js";
export { openApiDocument, OPENAPI_PATH, type OpenApiDocument } from "./openapi.js";
