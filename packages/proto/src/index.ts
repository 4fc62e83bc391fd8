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
export { keyHash, KEY_HASH_PATTERN } from "./wire/key-hash.js";
export * from "./errors/catalogue.js";
