import { status as GrpcStatus } from "@grpc/grpc-js";
import { RpcError } from "@rms/proto";
import { describe, expect, it } from "vitest";
import { ApiError, errorBody, errorCatalogue, fromCoreError, httpStatusOf, isRetryable, toApiError } from "./errors.js";

const rpc = (grpcCode: GrpcStatus, code: string, type = "invalid_request_error", param?: string) =>
  new RpcError(grpcCode, { type, code, message: `core says ${code}`, ...(param ? { param } : {}) });

describe("error catalogue", () => {
  it.each([
    ["parameter_unknown", 400],
    ["api_key_missing", 401],
    ["insufficient_scope", 403],
    ["https_required", 403],
    ["route_missing", 404],
    ["method_not_allowed", 405],
    ["state_conflict", 409],
    ["request_too_large", 413],
    ["unsupported_media_type", 415],
    ["rate_limited", 429],
    ["internal_error", 500],
    ["service_unavailable", 503],
  ] as const)("%s is HTTP %i", (code, status) => {
    expect(httpStatusOf(code)).toBe(status);
    expect(new ApiError(code, "x").status).toBe(status);
  });

  it("adds WWW-Authenticate to every 401 and Retry-After to 429 and 503", () => {
    expect(new ApiError("api_key_revoked", "x").headers).toEqual({ "WWW-Authenticate": "Bearer", "Stripe-Should-Retry": "false" });
    expect(new ApiError("rate_limited", "x").headers).toEqual({ "Retry-After": "1", "Stripe-Should-Retry": "true" });
    expect(ApiError.unavailable().headers).toEqual({ "Retry-After": "1", "Stripe-Should-Retry": "true" });
  });

  it("says Stripe-Should-Retry: true exactly for the codes marked retryable, false for every other", () => {
    const retryable = errorCatalogue()
      .filter(({ code }) => isRetryable(code))
      .map(({ code }) => code);
    expect(retryable).toEqual(["idempotency_key_in_use", "rate_limited", "too_many_streams", "outcome_unknown", "service_unavailable"]);
    for (const { code } of errorCatalogue()) {
      expect(new ApiError(code, "x").headers["Stripe-Should-Retry"]).toBe(retryable.includes(code) ? "true" : "false");
    }
  });

  it("echoes at most 500 characters of a message and 200 of a param, whatever the input", () => {
    const id = "res_" + "x".repeat(15_000);
    const error = new ApiError("resource_missing", `No such resource: '${id}'`, { param: id });
    expect([...error.message].length).toBe(501);
    expect(error.message.endsWith("…")).toBe(true);
    expect([...error.param!].length).toBe(201);
    expect(new ApiError("resource_missing", "short", { param: "id" }).message).toBe("short");
    // Cut by code points: an emoji is never split into a lone surrogate.
    expect(new ApiError("parameter_invalid", "😀".repeat(600)).message.isWellFormed()).toBe(true);
  });

  it("renders the envelope in contract order and omits an empty param", () => {
    expect(errorBody(new ApiError("parameter_missing", "Missing name.", { param: "name" }), "req_1")).toBe(
      '{"error":{"type":"invalid_request_error","code":"parameter_missing","message":"Missing name.","param":"name","request_id":"req_1"}}',
    );
    expect(errorBody(new ApiError("route_missing", "No."), "req_2")).toBe(
      '{"error":{"type":"invalid_request_error","code":"route_missing","message":"No.","request_id":"req_2"}}',
    );
  });
});

describe("fromCoreError: the one gRPC to HTTP mapping", () => {
  it.each([
    [GrpcStatus.INVALID_ARGUMENT, "string_too_long", "invalid_request_error", 400],
    [GrpcStatus.NOT_FOUND, "resource_missing", "invalid_request_error", 404],
    [GrpcStatus.UNAUTHENTICATED, "api_key_expired", "authentication_error", 401],
    [GrpcStatus.PERMISSION_DENIED, "insufficient_scope", "permission_error", 403],
    [GrpcStatus.ABORTED, "state_conflict", "invalid_request_error", 409],
    [GrpcStatus.FAILED_PRECONDITION, "state_conflict", "invalid_request_error", 409],
    [GrpcStatus.ALREADY_EXISTS, "idempotency_key_in_use", "idempotency_error", 409],
    [GrpcStatus.RESOURCE_EXHAUSTED, "rate_limited", "rate_limit_error", 429],
  ] as const)("gRPC %i with %s is HTTP %i and keeps type/code/param/message", (grpcCode, code, type, status) => {
    const error = fromCoreError(rpc(grpcCode, code, type, "name"));
    expect({ status: error.status, type: error.type, code: error.code, param: error.param, message: error.message }).toEqual({
      status,
      type,
      code,
      param: "name",
      message: `core says ${code}`,
    });
  });

  it.each([GrpcStatus.UNAVAILABLE, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.CANCELLED])("gRPC %i is 503 service_unavailable with Retry-After", (grpcCode) => {
    const error = fromCoreError(rpc(grpcCode, "whatever", "api_error"));
    expect([error.status, error.code, error.headers["Retry-After"]]).toEqual([503, "service_unavailable", "1"]);
    expect(error.message).not.toContain("whatever");
  });

  it("turns internal errors, unknown codes and mismatched statuses into a generic 500", () => {
    for (const error of [
      rpc(GrpcStatus.INTERNAL, "internal_error", "api_error"),
      rpc(GrpcStatus.UNKNOWN, "parameter_invalid"),
      rpc(GrpcStatus.INVALID_ARGUMENT, "mongo_exploded"),
      rpc(GrpcStatus.UNAUTHENTICATED, "admin_token_invalid", "authentication_error"),
      rpc(GrpcStatus.NOT_FOUND, "parameter_invalid"),
    ]) {
      const mapped = fromCoreError(error);
      expect([mapped.status, mapped.type, mapped.code]).toEqual([500, "api_error", "internal_error"]);
      expect(mapped.message).not.toContain("core says");
    }
  });

  it("never leaks an unknown error's message", () => {
    const mapped = toApiError(new Error("MongoServerError: E11000 at /srv/secret/path"));
    expect(mapped.code).toBe("internal_error");
    expect(mapped.message).not.toMatch(/Mongo|secret/);
  });
});
