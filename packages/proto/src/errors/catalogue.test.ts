import { status as GrpcStatus } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { catalogueError, ERROR_CATALOGUE, isErrorCode, isRetryable, PUBLIC_ERROR_CODES } from "./catalogue.js";

describe("the error catalogue", () => {
  it("builds a core failure from the code alone: status, type and a standard message come from the catalogue", () => {
    expect(catalogueError("idempotency_key_reused", "other parameters")).toMatchObject({
      grpcCode: GrpcStatus.INVALID_ARGUMENT,
      type: "idempotency_error",
      code: "idempotency_key_reused",
      message: "other parameters",
    });
    expect(catalogueError("resource_missing", "No such resource: 'res_x'", "id")).toMatchObject({ grpcCode: GrpcStatus.NOT_FOUND, param: "id" });
    expect(catalogueError("service_unavailable")).toMatchObject({
      grpcCode: GrpcStatus.UNAVAILABLE,
      type: "api_error",
      message: "The service is temporarily unavailable. Retry the request later.",
    });
  });

  it("words idempotency_key_reused once, for the gateway's records and core's creates alike", () => {
    expect(catalogueError("idempotency_key_reused").message).toBe(
      "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than the one used on " +
        "the original request.",
    );
  });

  it("keeps core's own credential codes out of the public ones", () => {
    expect(isErrorCode("admin_token_invalid")).toBe(false);
    expect(PUBLIC_ERROR_CODES).not.toContain("admin_token_invalid");
    expect(PUBLIC_ERROR_CODES).not.toContain("resume_token_lost");
    expect(PUBLIC_ERROR_CODES).toHaveLength(Object.keys(ERROR_CATALOGUE).length - 2);
    expect(isErrorCode("resource_missing")).toBe(true);
    expect(isErrorCode("toString")).toBe(false);
  });

  it("marks exactly the codes whose retry may succeed as retryable", () => {
    expect(PUBLIC_ERROR_CODES.filter(isRetryable).sort()).toEqual([
      "idempotency_key_in_use",
      "outcome_unknown",
      "rate_limited",
      "service_unavailable",
      "too_many_streams",
    ]);
  });
});
