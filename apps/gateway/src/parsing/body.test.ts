import { describe, expect, it } from "vitest";
import { ApiError } from "../errors.js";
import { parseForm, parseJson, queryParams } from "./body.js";

const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return error instanceof ApiError ? error.code : "not an ApiError";
  }
  return undefined;
}

describe("parseForm (Stripe bracket notation)", () => {
  it("nests brackets and collects [] into arrays", () => {
    expect(plain(parseForm("name=a+b%21&metadata[plan]=pro&metadata[tier]=1&events[]=x&events[]=y"))).toEqual({
      name: "a b!",
      metadata: { plan: "pro", tier: "1" },
      events: ["x", "y"],
    });
  });

  it("keeps numeric keys as object keys, not array indices", () => {
    expect(plain(parseForm("metadata[0]=a&metadata[123]=b"))).toEqual({ metadata: { "0": "a", "123": "b" } });
  });

  it("keeps __proto__, constructor and prototype as plain data keys", () => {
    const params = parseForm("metadata[__proto__]=x&metadata[constructor]=y&metadata[prototype]=z&__proto__=top");
    const metadata = params["metadata"] as Record<string, unknown>;
    expect(Object.getPrototypeOf(params)).toBeNull();
    expect(Object.getPrototypeOf(metadata)).toBeNull();
    expect(Object.keys(metadata)).toEqual(["__proto__", "constructor", "prototype"]);
    expect(metadata["__proto__"]).toBe("x");
    expect(Object.keys(params)).toEqual(["metadata", "__proto__"]);
    expect(({} as Record<string, unknown>)["x"]).toBeUndefined();
  });

  it("gives a repeated scalar as an array (which a string field then refuses)", () => {
    expect(plain(parseForm("name=a&name=b"))).toEqual({ name: ["a", "b"] });
  });

  it('keeps metadata="" as an empty string', () => {
    expect(plain(parseForm("metadata="))).toEqual({ metadata: "" });
  });

  it("allows 5 levels of nesting and refuses a 6th", () => {
    expect(plain(parseForm("a[b][c][d][e][f]=1"))).toEqual({ a: { b: { c: { d: { e: { f: "1" } } } } } });
    expect(codeOf(() => parseForm("a[b][c][d][e][f][g]=1"))).toBe("parameter_invalid");
  });

  it("allows 1,000 parameters and refuses 1,001", () => {
    const params = (n: number) => Array.from({ length: n }, (_, i) => `metadata[k${i}]=v`).join("&");
    expect(Object.keys(parseForm(params(1000))["metadata"] as object)).toHaveLength(1000);
    expect(codeOf(() => parseForm(params(1001)))).toBe("parameter_invalid");
  });

  it("names a `[]` list longer than 1,000 values when more parameters are allowed (a job's form), not the parameter count", () => {
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `params[filter][ids][]=res_${i}`).join("&");
    expect((parseForm(ids(1000), 250_000)["params"] as { filter: { ids: string[] } }).filter.ids).toHaveLength(1000);
    let refused: unknown;
    try {
      parseForm(ids(1001), 250_000);
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({
      code: "parameter_invalid",
      param: "params[filter][ids]",
      message: "Invalid params[filter][ids]: at most 1000 values in one list.",
    });
    // Within the usual limit, 1,001 values are first of all too many parameters.
    expect(() => parseForm(ids(1001))).toThrow(/^Too many parameters: at most 1000\.$/);
  });

  it("counts the parameters before decoding any: one part too many is refused even when another is malformed", () => {
    const parts = (n: number) => Array.from({ length: n }, (_, i) => `metadata[k${i}]=v`).join("&");
    expect(() => parseForm(`${parts(1000)}&bad=%zz`)).toThrow(/^Too many parameters: at most 1000\.$/);
    expect(() => parseForm(`${parts(999)}&bad=%zz`)).toThrow(/malformed %-escape/);
  });

  it("parses the query string of a URL", () => {
    expect(plain(queryParams("/v1/resources?limit=3&status=active"))).toEqual({ limit: "3", status: "active" });
    expect(plain(queryParams("/v1/resources"))).toEqual({});
  });
});

describe("parseJson", () => {
  it("returns null-prototype objects with __proto__ as data", () => {
    const params = parseJson('{"metadata":{"__proto__":"x","a.b":"y"}}');
    const metadata = params["metadata"] as Record<string, unknown>;
    expect(Object.getPrototypeOf(metadata)).toBeNull();
    expect(Object.keys(metadata)).toEqual(["__proto__", "a.b"]);
  });

  it.each(["{", "[1]", "null", '"text"', "42"])("refuses %s", (text) => {
    expect(codeOf(() => parseJson(text))).toBe("parameter_invalid");
  });

  it("refuses nesting deeper than 5 levels", () => {
    expect(codeOf(() => parseJson('{"a":{"b":{"c":{"d":{"e":{"f":1}}}}}}'))).toBeUndefined();
    expect(codeOf(() => parseJson('{"a":{"b":{"c":{"d":{"e":{"f":{"g":1}}}}}}}'))).toBe("parameter_invalid");
  });
});

describe("input edge cases (issue 11 item 6)", () => {
  it("counts JSON array nesting toward the depth limit, like objects", () => {
    const nested = (levels: number, leaf: unknown = "x"): unknown => (levels === 0 ? leaf : [nested(levels - 1, leaf)]);
    expect(codeOf(() => parseJson(JSON.stringify({ a: nested(5) })))).toBeUndefined();
    expect(codeOf(() => parseJson(JSON.stringify({ a: nested(6) })))).toBe("parameter_invalid");
    expect(codeOf(() => parseJson(JSON.stringify({ a: nested(100) })))).toBe("parameter_invalid");
    expect(codeOf(() => parseJson(JSON.stringify({ a: [{ b: [{ c: [{}] }] }] })))).toBe("parameter_invalid");
  });

  it("refuses a lone UTF-16 surrogate in a JSON value or key", () => {
    expect(codeOf(() => parseJson('{"name":"a\\ud800b"}'))).toBe("parameter_invalid");
    expect(codeOf(() => parseJson('{"metadata":{"\\udc00":"v"}}'))).toBe("parameter_invalid");
    expect(codeOf(() => parseJson('{"tags":["\\ud83d"]}'))).toBe("parameter_invalid");
    expect(plain(parseJson('{"name":"\\ud83d\\ude00"}'))).toEqual({ name: "😀" });
  });

  it("refuses malformed %-escapes and %-escaped bytes that are not UTF-8, in form bodies and query strings", () => {
    for (const text of ["name=%", "name=%zz", "name=a%2", "na%G0me=x", "name=%ED%A0%80", "name=%C3", "name=%FF", "metadata[%C3]=x"]) {
      expect(
        codeOf(() => parseForm(text)),
        text,
      ).toBe("parameter_invalid");
      expect(
        codeOf(() => queryParams(`/v1/resources?${text}`)),
        text,
      ).toBe("parameter_invalid");
    }
    expect(codeOf(() => queryParams("/v1/resources?name=\u00e9"))).toBe("parameter_invalid");
    expect(plain(parseForm("name=%C3%A9+%F0%9F%98%80"))).toEqual({ name: "é 😀" });
  });

  it("refuses a parameter given both as a value and with [keys], in either order", () => {
    for (const text of ["metadata[a]=1&metadata=", "metadata=&metadata[a]=1", "metadata=x&metadata[a][b]=1", "metadata[a]=1&metadata[a][b]=2"]) {
      expect(
        codeOf(() => parseForm(text)),
        text,
      ).toBe("parameter_invalid");
    }
    expect(plain(parseForm("tags[]=a&tags[]=b"))).toEqual({ tags: ["a", "b"] });
    expect(plain(parseForm("metadata[a]=1&metadata[b]="))).toEqual({ metadata: { a: "1", b: "" } });
  });
});
