// The whole public face of @rms/proto: generated rms.v1 types and the grpc-js adapter.
export * from "./gen/rms/v1/common_pb.js";
export * from "./gen/rms/v1/errors_pb.js";
export * from "./gen/rms/v1/resources_pb.js";
export * from "./gen/rms/v1/admin_pb.js";
export { addService, reflectionPackageDefinition, type ReflectionPackageDefinition, type ServeOptions } from "./grpc/server.js";
export { createClient, coreTlsFilesFromEnv, mutualTlsCredentials, type ClientOptions, type CoreTlsFiles } from "./grpc/client.js";
export { RpcError, TransportError, isServiceError, STATUS_DETAILS_KEY, type ErrorFields } from "./grpc/rpc-error.js";
export { toServiceDefinition, methodPath } from "./grpc/service-definition.js";
export type { AnyService, CallContext, CallOptions, ServiceClient, ServiceImplementation } from "./grpc/types.js";
export * from "./gen/grpc/health/v1/health_pb.js";
// Wire constants: each defined here once, used by core, gateway and CLI.
export * from "./wire/key-hash.js";
export * from "./wire/metadata.js";
export * from "./wire/enums.js";
export * from "./wire/limits.js";
export * from "./wire/scopes.js";
export * from "./wire/request-id.js";
export * from "./wire/duplicate-key.js";
export * from "./errors/catalogue.js";
