// The whole public face of @rms/client: the client, its options, the errors it rejects with, and the generated
// request and answer types (and enums) of core's services, so a service needs no other import to call core.
export { createCoreClient, DEFAULT_DEADLINE_MS, type CoreCallOptions, type CoreClient, type CoreClientOptions, type CoreTls } from "./create-core-client.js";
export { DEFAULT_RETRY, type RetryPolicy } from "./retry.js";
export { CORE_SERVICES, type CoreServiceName } from "./services.js";
export { RpcError, TransportError } from "@rms/proto";
export * from "@rms/proto/generated";
