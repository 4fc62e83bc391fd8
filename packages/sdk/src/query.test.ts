import { describe, expect, it } from "vitest";
import { fillPath, queryString } from "./query.js";

describe("query strings in bracket notation", () => {
  it("writes objects with brackets, lists with [], and leaves out what is undefined", () => {
    const query = queryString({
      status: ["active", "paused"],
      metadata: { plan: "pro" },
      created: { gte: 1700000000 },
      limit: 5,
      starting_after: undefined,
      delivery_success: false,
    });
    expect(decodeURIComponent(query)).toBe("?status[]=active&status[]=paused&metadata[plan]=pro&created[gte]=1700000000&limit=5&delivery_success=false");
    expect(queryString({})).toBe("");
    expect(queryString(undefined)).toBe("");
  });

  it("fills a path's parameters, encoded, and refuses a missing id", () => {
    expect(fillPath("/v1/resources/{id}", ["res_1"])).toBe("/v1/resources/res_1");
    expect(fillPath("/v1/files/{id}/contents", ["a/b"])).toBe("/v1/files/a%2Fb/contents");
    expect(() => fillPath("/v1/resources/{id}", [])).toThrow(/an id is required/);
  });
});
