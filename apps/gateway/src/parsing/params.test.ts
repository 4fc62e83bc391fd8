import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.js";
import type { Params } from "./body.js";
import { optionalEnum, optionalInteger, optionalMetadata, optionalString, rejectUnknown, requiredString } from "./params.js";

const params = (value: Record<string, unknown>) => Object.assign(Object.create(null) as Params, value);

function failure(run: () => unknown): { code: string; param: string | undefined } | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return { code: error.code, param: error.param };
    throw error;
  }
  return undefined;
}

describe("parameter checks", () => {
  it("names the first unknown parameter", () => {
    expect(failure(() => rejectUnknown(params({ name: "a", colour: "red", size: 1 }), ["name"]))).toEqual({ code: "parameter_unknown", param: "colour" });
    expect(failure(() => rejectUnknown(JSON.parse('{"__proto__":{"x":1}}') as Params, ["name"]))).toEqual({ code: "parameter_unknown", param: "__proto__" });
  });

  it("checks strings", () => {
    expect(requiredString(params({ name: "x" }), "name")).toBe("x");
    expect(failure(() => requiredString(params({}), "name"))).toEqual({ code: "parameter_missing", param: "name" });
    for (const value of [1, true, null, ["a"], { a: "b" }]) {
      expect(failure(() => optionalString(params({ name: value }), "name"))).toEqual({ code: "parameter_invalid", param: "name" });
    }
  });

  it("checks enums", () => {
    expect(optionalEnum(params({ status: "paused" }), "status", ["active", "paused"])).toBe("paused");
    expect(optionalEnum(params({}), "status", ["active"])).toBeUndefined();
    expect(failure(() => optionalEnum(params({ status: "ACTIVE" }), "status", ["active"]))).toEqual({ code: "parameter_invalid", param: "status" });
    expect(failure(() => optionalEnum(params({ status: "" }), "status", ["active"]))).toEqual({ code: "parameter_invalid_empty", param: "status" });
  });

  it("accepts integers as numbers or decimal strings", () => {
    const range = { min: 1, max: 100 };
    expect(optionalInteger(params({ limit: "20" }), "limit", range)).toBe(20);
    expect(optionalInteger(params({ limit: 100 }), "limit", range)).toBe(100);
    for (const value of ["0", "101", "1.5", 1.5, "1e2", "", " 5", "abc", true, null, ["5"]]) {
      expect(failure(() => optionalInteger(params({ limit: value }), "limit", range, "limit_invalid"))).toEqual({ code: "limit_invalid", param: "limit" });
    }
  });

  it("reads metadata as ordered string entries, numbers and booleans in string form", () => {
    expect(optionalMetadata(params({ metadata: params({ b: "1", a: 2, c: true, d: "" }) }))).toEqual({
      entries: [
        { key: "b", value: "1" },
        { key: "a", value: "2" },
        { key: "c", value: "true" },
        { key: "d", value: "" },
      ],
      clear: false,
    });
    expect(optionalMetadata(params({ metadata: "" }))).toEqual({ entries: [], clear: true });
    expect(optionalMetadata(params({}))).toBeUndefined();
  });

  it("refuses metadata that is not an object of scalars", () => {
    expect(failure(() => optionalMetadata(params({ metadata: "x" })))).toEqual({ code: "metadata_invalid", param: "metadata" });
    expect(failure(() => optionalMetadata(params({ metadata: ["x"] })))).toEqual({ code: "metadata_invalid", param: "metadata" });
    expect(failure(() => optionalMetadata(params({ metadata: null })))).toEqual({ code: "metadata_invalid", param: "metadata" });
    for (const value of [null, ["x"], { nested: "x" }]) {
      expect(failure(() => optionalMetadata(params({ metadata: params({ k: value }) })))).toEqual({ code: "metadata_invalid", param: "metadata[k]" });
    }
  });
});
