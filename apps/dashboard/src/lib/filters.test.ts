import { describe, expect, it } from "vitest";
import { dayBound, firstPage, isFiltered, listQuery, listQueryString, parseFilters, searchQueryOf } from "./filters";

describe("resource filters", () => {
  it("keep only known, well-formed search params from the URL", () => {
    expect(
      parseFilters({ status: "paused", from: "2026-11-01", to: "not a day", metaKey: " plan ", metaValue: "pro", extra: "x", ids: "", after: "res_1" }),
    ).toEqual({
      status: "paused",
      from: "2026-11-01",
      metaKey: "plan",
      metaValue: "pro",
      after: "res_1",
    });
    expect(parseFilters({ status: "deleted" })).toEqual({});
  });

  it("become the list's query in the API's bracket notation, one page by cursor", () => {
    const query = listQuery(
      { status: "active", from: "2026-11-01", to: "2026-11-02", metaKey: "plan", metaValue: "pro", ids: "res_a, res_b res_c", after: "res_z" },
      20,
    );
    expect(listQueryString(query)).toBe(
      [
        "limit=20",
        "status=active",
        `created%5Bgte%5D=${dayBound("2026-11-01", false)}`,
        `created%5Blte%5D=${dayBound("2026-11-02", true)}`,
        "metadata%5Bplan%5D=pro",
        "ids%5B%5D=res_a",
        "ids%5B%5D=res_b",
        "ids%5B%5D=res_c",
        "starting_after=res_z",
      ].join("&"),
    );
    expect(dayBound("2026-11-01", false)).toBe(Date.UTC(2026, 10, 1) / 1000);
    expect(dayBound("2026-11-01", true)).toBe(Date.UTC(2026, 10, 1) / 1000 + 86_399);
  });

  it("never ask for a count or an offset: a limit and at most one cursor", () => {
    expect(listQuery({ after: "res_a", before: "res_b" })).toEqual({ limit: 20, starting_after: "res_a" });
    expect(listQuery({ before: "res_b" })).toEqual({ limit: 20, ending_before: "res_b" });
    expect(Object.keys(listQuery({ status: "active" }))).toEqual(["limit", "status"]);
  });

  it("turn into a search query in the API's language, values quoted and escaped", () => {
    expect(searchQueryOf({ status: "active", metaKey: "o'k", metaValue: "it's", from: "2026-11-01" })).toBe(
      `status:'active' AND metadata['o\\'k']:'it\\'s' AND created>=${dayBound("2026-11-01", false)}`,
    );
  });

  it("a filter change starts from the first page", () => {
    expect(firstPage({ status: "active", after: "res_a", page: "p" })).toEqual({ status: "active" });
    expect(isFiltered({ after: "res_a" })).toBe(false);
    expect(isFiltered({ q: "status:'active'" })).toBe(true);
  });
});
