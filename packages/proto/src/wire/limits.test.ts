import { describe, expect, it } from "vitest";
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, PAGE_SIZE_REFUSAL, pageSize, SEARCH_LIMIT_DEFAULT } from "./limits.js";

const refuse = (message: string) => new RangeError(message);

describe("pageSize: the one page-size rule of the gateway and core", () => {
  it("takes a whole number from 1 to LIST_LIMIT_MAX as asked", () => {
    expect(pageSize(1, refuse)).toBe(1);
    expect(pageSize(LIST_LIMIT_MAX, refuse)).toBe(LIST_LIMIT_MAX);
  });

  it("answers the list's default when none was asked", () => {
    expect(pageSize(undefined, refuse)).toBe(LIST_LIMIT_DEFAULT);
    expect(pageSize(undefined, refuse, SEARCH_LIMIT_DEFAULT)).toBe(SEARCH_LIMIT_DEFAULT);
  });

  it.each([0, -1, LIST_LIMIT_MAX + 1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])("refuses %s in the caller's error type", (asked) => {
    expect(() => pageSize(asked, refuse)).toThrow(new RangeError(PAGE_SIZE_REFUSAL));
  });
});
