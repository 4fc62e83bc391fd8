// The whole public face of @rms/proto: generated types (every file under gen/, listed by the generate step),
// the grpc-js adapter, the domains' vocabularies, the wire constants and the error catalogue.
export * from "./generated.js";
export {
  addService,
  reflectionPackageDefinition,
  CLIENT_STREAM_READ_AHEAD,
  type ReflectionPackageDefinition,
  type ServeOptions,
} from "./grpc/server.js";
export {
  createClient,
  coreTlsFilesFromEnv,
  mutualTlsCredentials,
  HOP_CHANNEL_OPTIONS,
  HOP_SERVER_OPTIONS,
  CLIENT_STREAM_UNSENT_BYTES,
  type ClientOptions,
  type CoreTlsFiles,
} from "./grpc/client.js";
export { RpcError, TransportError, isServiceError, STATUS_DETAILS_KEY, type ErrorFields } from "./grpc/rpc-error.js";
export { toServiceDefinition, methodPath } from "./grpc/service-definition.js";
export type { AnyService, CallContext, Caller, CallOptions, CallSignal, ServiceClient, ServiceImplementation } from "./grpc/types.js";
export { CORE_SERVICES, type CoreServiceName } from "./grpc/core-services.js";
// Each domain's vocabulary (id prefixes, event types, scopes, enum names) and the lists derived from them.
export * from "./vocabulary/index.js";
// Wire constants: each defined here once, used by core, gateway and CLI.
export * from "./wire/key-hash.js";
export * from "./wire/metadata.js";
export * from "./wire/metadata-map.js";
export * from "./wire/limits.js";
export * from "./wire/request-id.js";
export * from "./wire/duplicate-key.js";
export * from "./wire/idempotency.js";
export * from "./wire/health.js";
export * from "./wire/search-page.js";
export * from "./errors/catalogue.js";
