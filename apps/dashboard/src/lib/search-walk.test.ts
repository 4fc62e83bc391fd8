import { describe, expect, it } from "vitest";
import { emptySearchText, type SearchAnswer, searchPage } from "./search-walk";

/** Answers as the search API gives them over a large account: empty pages with more to walk, then a match. */
function pages(answers: SearchAnswer<string>[]) {
  const asked: (string | undefined)[] = [];
  return {
    asked,
    fetchPage: async (page: string | undefined) => {
      asked.push(page);
      return answers[asked.length - 1]!;
    },
  };
}

describe("a page of search results", () => {
  it("walks on past empty answers to the first that holds a match, and says how many requests it took", async () => {
    const source = pages([
      { data: [], has_more: true, next_page: "p2" },
      { data: [], has_more: true, next_page: "p3" },
      { data: ["res_a"], has_more: true, next_page: "p4" },
    ]);
    expect(await searchPage(source.fetchPage, undefined)).toEqual({ data: ["res_a"], has_more: true, next_page: "p4", requests: 3 });
    expect(source.asked).toEqual([undefined, "p2", "p3"]);
  });

  it("stops at the end of the search, and after at most `max` requests with what it has", async () => {
    const ended = pages([{ data: [], has_more: false, next_page: null }]);
    expect(await searchPage(ended.fetchPage, "p9")).toMatchObject({ data: [], has_more: false, requests: 1 });
    expect(ended.asked).toEqual(["p9"]);
    const long = pages(Array.from({ length: 10 }, (_, i) => ({ data: [], has_more: true, next_page: `p${i + 2}` })));
    expect(await searchPage(long.fetchPage, undefined, 4)).toMatchObject({ data: [], has_more: true, next_page: "p5", requests: 4 });
    expect(long.asked).toHaveLength(4);
  });

  it("says no match, or none yet in the part searched", () => {
    expect(emptySearchText({ has_more: false, requests: 3 })).toBe("No match.");
    expect(emptySearchText({ has_more: true, requests: 20 })).toBe(
      "No match yet in the part searched so far (20 requests, at most 20,000 resources); More results searches on.",
    );
  });
});
