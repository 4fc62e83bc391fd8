import { status as GrpcStatus } from "@grpc/grpc-js";
import { MongoNetworkError, MongoOperationTimeoutError, MongoServerError, MongoWriteConcernError } from "mongodb";
import { describe, expect, it } from "vitest";
import { errors, isUnansweredWrite, mapStoreError } from "./errors.js";

describe("mapStoreError", () => {
  it("turns database outages into UNAVAILABLE service_unavailable", () => {
    for (const outage of [new MongoNetworkError("connect ECONNREFUSED"), new MongoOperationTimeoutError("timed out")]) {
      expect(mapStoreError(outage)).toMatchObject({ grpcCode: GrpcStatus.UNAVAILABLE, code: "service_unavailable" });
    }
  });

  it("turns what a replica set answers during an election into UNAVAILABLE (a 503 with Retry-After, never a 500)", () => {
    for (const [code, codeName] of [
      [10107, "NotWritablePrimary"],
      [11602, "InterruptedDueToReplStateChange"],
      [189, "PrimarySteppedDown"],
      [91, "ShutdownInProgress"],
      [11600, "InterruptedAtShutdown"],
      [13435, "NotPrimaryNoSecondaryOk"],
      [13436, "NotPrimaryOrSecondary"],
    ] as const) {
      expect(mapStoreError(new MongoServerError({ message: "not primary", code, codeName })), codeName).toMatchObject({
        grpcCode: GrpcStatus.UNAVAILABLE,
        code: "service_unavailable",
      });
    }
  });

  it("counts a write concern error (applied by a primary that could not confirm a majority) as a write with an unknown outcome", () => {
    const stepDown = new MongoWriteConcernError({ writeConcernError: { code: 189, errmsg: "Primary stepped down while waiting for replication" } } as never);
    expect(isUnansweredWrite(stepDown)).toBe(true);
    expect(isUnansweredWrite(new MongoNetworkError("connection reset"))).toBe(true);
    expect(isUnansweredWrite(new MongoServerError({ message: "not primary", code: 10107 }))).toBe(false);
  });

  it("says when the database was too slow for the call's deadline", () => {
    expect(mapStoreError(new MongoOperationTimeoutError("timed out"))?.message).toMatch(
      /^Deadline exceeded: the database did not answer within the call's deadline/,
    );
    expect(mapStoreError(new MongoNetworkError("connect ECONNREFUSED"))?.message).not.toMatch(/deadline/i);
  });

  it("passes typed errors through and leaves anything else unknown (a 500 that leaks nothing)", () => {
    const notFound = errors.notFound("resource", "res_x");
    expect(mapStoreError(notFound)).toBe(notFound);
    expect(mapStoreError(new MongoServerError({ message: "E11000 duplicate key", code: 11000 }))).toBeUndefined();
    expect(mapStoreError(new Error("ECONNREFUSED in some message"))).toBeUndefined();
  });
});
