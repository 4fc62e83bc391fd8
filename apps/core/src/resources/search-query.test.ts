import { describe, expect, it } from "vitest";
import { parseSearchQuery } from "./search-query.js";

/** The filter a query parses to, or `none`, or the refusal's code, param and message. */
function parsed(query: string): unknown {
  try {
    const result = parseSearchQuery(query);
    return result.none ? "none" : result.filter;
  } catch (error) {
    const e = error as { code: string; param?: string; message: string };
    return `${e.code} ${e.param}: ${e.message}`;
  }
}

describe("the search query language", () => {
  it.each([
    ["status:'active'", { status: "active" }],
    [`status:"active" OR status:'paused'`, { status: ["active", "paused"] }],
    ["status:'active' OR status:'paused' AND status:'paused'", { status: "paused" }],
    ["metadata['plan']:'pro'", { metadata: [{ k: "plan", v: "pro" }] }],
    [
      "metadata['plan']:'pro' or metadata['plan']:'team' metadata[\"a.b\"]:'1'",
      {
        metadata: [
          { k: "plan", v: "pro" },
          { k: "plan", v: "team" },
          { k: "a.b", v: "1" },
        ],
      },
    ],
    ["metadata['$where']:'x'", { metadata: [{ k: "$where", v: "x" }] }],
    ["name~'St'", { name: [{ value: "St", prefix: true }] }],
    [
      "name:'It\\'s' OR name~'ab'",
      {
        name: [
          { value: "It's", prefix: false },
          { value: "ab", prefix: true },
        ],
      },
    ],
    ["name~'ab' AND name~'ABC'", { name: [{ value: "ABC", prefix: true }] }],
    ["name~'ab' AND name:'Abc'", { name: [{ value: "Abc", prefix: false }] }],
    ["created>10 created<=20 AND created>=12", { created: { gt: 10, gte: 12, lte: 20 } }],
    ["created:15", { created: { gte: 15, lte: 15 } }],
    ["  status:'archived'   and   created<5  ", { status: "archived", created: { lt: 5 } }],
    ["status:'active' AND status:'paused'", "none"],
    ["name~'ab' AND name~'cd'", "none"],
    ["metadata['k']:'1' AND metadata['k']:'2'", "none"],
  ])("%s", (query, expected) => {
    expect(parsed(query)).toEqual(expected);
  });

  it.each([
    ["", 1, "empty"],
    ["   ", 1, "empty"],
    ["status", 7, "expected an operator"],
    ["status:", 8, "takes a quoted string"],
    ["status:active", 8, "takes a quoted string"],
    ["status:'gone'", 8, "must be one of active, paused, archived"],
    ["status~'active'", 7, "only name takes ~"],
    ["colour:'red'", 1, "unknown field 'colour'"],
    ["status:'active' AND", 20, "expected a clause"],
    ["status:'active' OR OR", 20, "expected a clause"],
    ["status:'active' OR name~'ab'", 20, "OR joins clauses on the same field only"],
    ["metadata['a']:'1' OR metadata['b']:'1'", 22, "OR joins clauses on the same field only"],
    ["created>1 OR created<5", 11, "created clauses can only be joined by AND"],
    ["created>'5'", 9, "takes an integer"],
    ["created~5", 8, "created takes"],
    ["created>99999999999999999999", 9, "must be a Unix time"],
    ["name~'a'", 6, "at least 2 characters"],
    ["name:''", 6, "non-empty"],
    [`name:'${"x".repeat(201)}'`, 6, "at most 200"],
    ["name>'ab'", 5, "only created takes >"],
    ["name:'unclosed", 6, "not closed"],
    ["name:'a\\x'", 8, "unknown escape"],
    ["-status:'active'", 1, "negation"],
    ["status:'active' (name~'ab')", 17, "unexpected character '('"],
    ["metadata.plan:'pro'", 9, "unexpected character '.'"],
    ["status:'active' \u{1F600}", 17, "unexpected character '\u{1F600}'"],
    ["metadata[plan]:'pro'", 9, "metadata['key']"],
    ["metadata['']:'x'", 10, "at least 1 character"],
    ["metadata['a[b']:'x'", 10, "may not contain"],
    [`metadata['${"k".repeat(41)}']:'x'`, 10, "at most 40"],
    [`metadata['k']:'${"v".repeat(501)}'`, 15, "at most 500"],
    ["metadata['k']:''", 15, "must not be empty"],
    [Array.from({ length: 6 }, (_, i) => `metadata['k${i}']:'1'`).join(" "), 96, "at most 5 metadata keys"],
    [Array.from({ length: 11 }, (_, i) => `created>${i}`).join(" AND "), 141, "at most 10 clauses"],
  ])("refuses %s at position %i", (query, position, words) => {
    const answer = parsed(query) as string;
    expect(answer).toMatch(/^search_query_invalid query: Invalid query at position \d+: /);
    expect(answer).toContain(`position ${position}:`);
    expect(answer).toContain(words);
  });

  it("takes 10 clauses and 5 metadata keys", () => {
    expect(parsed(Array.from({ length: 10 }, (_, i) => `created>${i}`).join(" AND "))).toEqual({ created: { gt: 9 } });
    expect(parsed(Array.from({ length: 5 }, (_, i) => `metadata['k${i}']:'1'`).join(" "))).toMatchObject({
      metadata: expect.arrayContaining([{ k: "k4", v: "1" }]),
    });
  });
});
