import { status as GrpcStatus } from "@grpc/grpc-js";
import { MongoNetworkError, MongoOperationTimeoutError, MongoServerError } from "mongodb";
import { describe, expect, it } from "vitest";
import { errors, mapStoreError } from "./errors.js";

describe("mapStoreError", () => {
  it("turns database outages into UNAVAILABLE service_unavailable", () => {
    for (const outage of [new MongoNetworkError("connect ECONNREFUSED"), new MongoOperationTimeoutError("timed out")]) {
      expect(mapStoreError(outage)).toMatchObject({ grpcCode: GrpcStatus.UNAVAILABLE, code: "service_unavailable" });
    }
  });

  it("says when the database was too slow for the call's deadline", () => {
    expect(mapStoreError(new MongoOperationTimeoutError("timed out"))?.message).toMatch(/^Deadline exceeded: the database did not answer within the call's deadline/);
    expect(mapStoreError(new MongoNetworkError("connect ECONNREFUSED"))?.message).not.toMatch(/deadline/i);
  });

  it("passes typed errors through and leaves anything else unknown (a 500 that leaks nothing)", () => {
    const notFound = errors.notFound("resource", "res_x");
    expect(mapStoreError(notFound)).toBe(notFound);
    expect(mapStoreError(new MongoServerError({ message: "E11000 duplicate key", code: 11000 }))).toBeUndefined();
    expect(mapStoreError(new Error("ECONNREFUSED in some message"))).toBeUndefined();
  });
});
