import { describe, expect, it } from "vitest";
import { KeyKind } from "../gen/rms/v1/admin_pb.js";
import { ResourceStatus } from "../gen/rms/v1/resources_pb.js";
import { isDuplicateKeyError } from "./duplicate-key.js";
import { KEY_KIND, RESOURCE_STATUS } from "../vocabulary/index.js";
import { keyHash, KEY_HASH_PATTERN } from "./key-hash.js";
import { bearerMetadata, bearerToken } from "./metadata.js";
import { newRequestId, requestIdFloorAt, requestIdTime } from "./request-id.js";

describe("wire constants", () => {
  it("maps every named enum value both ways, and UNSPECIFIED or unknown numbers to no name", () => {
    expect(RESOURCE_STATUS.names).toEqual(["active", "paused", "archived"]);
    for (const name of RESOURCE_STATUS.names) expect(RESOURCE_STATUS.nameOf(RESOURCE_STATUS.valueOf(name))).toBe(name);
    expect(RESOURCE_STATUS.nameOf(ResourceStatus.UNSPECIFIED)).toBeUndefined();
    expect(RESOURCE_STATUS.nameOf(99)).toBeUndefined();
    expect(KEY_KIND.valueOf("restricted")).toBe(KeyKind.RESTRICTED);
    expect(KEY_KIND.nameOf(KeyKind.UNSPECIFIED)).toBeUndefined();
    expect(KEY_KIND.isName("secret")).toBe(true);
    expect(KEY_KIND.isName("toString")).toBe(false);
  });

  it("hashes a key as lower-case hex SHA-256", () => {
    expect(keyHash("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(KEY_HASH_PATTERN.test(keyHash("sk_test_x"))).toBe(true);
    expect(KEY_HASH_PATTERN.test(keyHash("abc").toUpperCase())).toBe(false);
  });

  it("mints distinct request ids of 24 base62 characters after req_", () => {
    const ids = new Set(Array.from({ length: 1000 }, () => newRequestId()));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^req_[0-9A-Za-z]{24}$/);
  });

  it("mints request ids that sort by the time they were made, and reads that time back", () => {
    const early = newRequestId(1_700_000_000_000);
    const late = newRequestId(1_700_000_000_001);
    expect(early < late).toBe(true);
    expect(requestIdTime(early)).toBe(1_700_000_000_000);
    expect(requestIdFloorAt(1_700_000_000_001) <= late).toBe(true);
    expect(requestIdFloorAt(1_700_000_000_001) > early).toBe(true);
    expect(requestIdTime("req_short")).toBeUndefined();
  });

  it("carries a bearer token in metadata and reads it back, refusing anything else", () => {
    expect(bearerToken(bearerMetadata("t0ken").authorization)).toBe("t0ken");
    expect(bearerToken("bearer t0ken")).toBeNull();
    expect(bearerToken(Buffer.from("Bearer t0ken"))).toBeNull();
    expect(bearerToken(undefined)).toBeNull();
  });

  it("recognises a unique-index refusal by its server code only", () => {
    expect(isDuplicateKeyError(Object.assign(new Error("E11000 duplicate key"), { code: 11000 }))).toBe(true);
    expect(isDuplicateKeyError(Object.assign(new Error("E11000 duplicate key"), { code: 11001 }))).toBe(false);
    expect(isDuplicateKeyError(new Error("E11000 duplicate key"))).toBe(false);
    expect(isDuplicateKeyError(null)).toBe(false);
  });
});
