import { RpcError } from "@rms/proto";
import { status as GrpcStatus } from "@grpc/grpc-js";
import { MongoNetworkError, MongoNotConnectedError, MongoOperationTimeoutError, MongoServerSelectionError, MongoTopologyClosedError } from "mongodb";

/**
 * The one catalogue of errors core produces. Each is an RpcError: a gRPC status
 * plus the public type/code/param/message that the gateway renders as is.
 */
export const errors = {
  invalid(code: InvalidCode, message: string, param?: string): RpcError {
    return new RpcError(GrpcStatus.INVALID_ARGUMENT, { type: "invalid_request_error", code, message, ...(param ? { param } : {}) });
  },
  notFound(kind: string, id: string, param = "id"): RpcError {
    return new RpcError(GrpcStatus.NOT_FOUND, { type: "invalid_request_error", code: "resource_missing", param, message: `No such ${kind}: '${id}'` });
  },
  unauthenticated(code: "api_key_invalid" | "api_key_expired" | "api_key_revoked" | "admin_token_invalid", message: string): RpcError {
    return new RpcError(GrpcStatus.UNAUTHENTICATED, { type: "authentication_error", code, message });
  },
  /** A known internal caller asking for a call its role does not allow (see grpc/permissions.ts). */
  permissionDenied(code: "method_not_allowed", message: string): RpcError {
    return new RpcError(GrpcStatus.PERMISSION_DENIED, { type: "permission_error", code, message });
  },
  conflict(code: "idempotency_key_in_use" | "state_conflict", message: string): RpcError {
    const type = code === "idempotency_key_in_use" ? "idempotency_error" : "invalid_request_error";
    return new RpcError(GrpcStatus.ABORTED, { type, code, message });
  },
  unavailable(): RpcError {
    return new RpcError(GrpcStatus.UNAVAILABLE, {
      type: "api_error",
      code: "service_unavailable",
      message: "The service is temporarily unavailable. Retry the request later.",
    });
  },
};

export type InvalidCode =
  | "parameter_missing"
  | "parameter_invalid"
  | "parameter_invalid_empty"
  | "string_too_long"
  | "metadata_invalid"
  | "limit_invalid";

/** Database outages (told apart by the driver's error classes, never by message text) become UNAVAILABLE (the gateway answers 503); other unknown errors stay unknown (500). */
export function mapStoreError(error: unknown): RpcError | undefined {
  if (error instanceof RpcError) return error;
  if (
    error instanceof MongoNetworkError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError ||
    error instanceof MongoOperationTimeoutError
  ) {
    return errors.unavailable();
  }
  return undefined;
}
