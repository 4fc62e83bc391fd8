import { describe, expect, it } from "vitest";
import { searchPagePosition, searchPageToken } from "./search-page.js";

describe("search page tokens", () => {
  const position = `res_${"0".repeat(22)}`;
  it("give back their position for the query they were made for, and nothing for another query or a malformed token", () => {
    const token = searchPageToken(position, "status:'active'");
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(searchPagePosition(token, "status:'active'")).toBe(position);
    expect(searchPagePosition(token, "status:'paused'")).toBeUndefined();
    for (const bad of ["", "not a token", "MS5yZXNfMExyZHE4RHgzYjlxWjdtVGYyUWtOMS5hYmM"]) expect(searchPagePosition(bad, "status:'active'")).toBeUndefined();
  });
});
