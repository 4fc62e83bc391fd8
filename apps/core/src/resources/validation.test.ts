import { describe, expect, it } from "vitest";
import { codePointLength, mergeMetadata, validateName } from "./validation.js";

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return (error as { code: string; param?: string }).code;
  }
  return "ok";
};

describe("name", () => {
  it("counts Unicode code points, not UTF-16 units", () => {
    const emoji = "😀".repeat(200);
    expect(emoji.length).toBe(400);
    expect(codePointLength(emoji)).toBe(200);
    expect(validateName(emoji)).toBe(emoji);
    expect(codeOf(() => validateName("😀".repeat(201)))).toBe("string_too_long");
  });

  it("keeps surrounding whitespace and refuses the empty string", () => {
    expect(validateName("  spaced  ")).toBe("  spaced  ");
    expect(codeOf(() => validateName(""))).toBe("parameter_invalid_empty");
    expect(codeOf(() => validateName("a".repeat(200)))).toBe("ok");
    expect(codeOf(() => validateName("a".repeat(201)))).toBe("string_too_long");
  });
});

describe("metadata", () => {
  const set = (entries: Record<string, string>) => Object.entries(entries).map(([key, value]) => ({ key, value }));

  it("stores keys that look like operators, paths or prototype names verbatim", () => {
    const pairs = mergeMetadata([], set({ $where: "1", "a.b": "2" }).concat({ key: "__proto__", value: "3" }, { key: "constructor", value: "4" }));
    expect(pairs).toEqual([
      { k: "$where", v: "1" },
      { k: "a.b", v: "2" },
      { k: "__proto__", v: "3" },
      { k: "constructor", v: "4" },
    ]);
  });

  it("merges: sets in place, appends new keys, removes keys set to empty", () => {
    const existing = [
      { k: "a", v: "1" },
      { k: "b", v: "2" },
    ];
    expect(mergeMetadata(existing, set({ b: "20", c: "3", a: "" }))).toEqual([
      { k: "b", v: "20" },
      { k: "c", v: "3" },
    ]);
  });

  it("clears everything before merging when asked", () => {
    expect(mergeMetadata([{ k: "a", v: "1" }], set({ z: "9" }), true)).toEqual([{ k: "z", v: "9" }]);
    expect(mergeMetadata([{ k: "a", v: "1" }], [], true)).toEqual([]);
  });

  it("enforces key and value limits", () => {
    expect(codeOf(() => mergeMetadata([], set({ ["k".repeat(40)]: "v" })))).toBe("ok");
    expect(codeOf(() => mergeMetadata([], set({ ["k".repeat(41)]: "v" })))).toBe("metadata_invalid");
    expect(codeOf(() => mergeMetadata([], set({ "": "v" })))).toBe("metadata_invalid");
    expect(codeOf(() => mergeMetadata([], set({ "a[b]": "v" })))).toBe("metadata_invalid");
    expect(codeOf(() => mergeMetadata([], set({ k: "v".repeat(500) })))).toBe("ok");
    expect(codeOf(() => mergeMetadata([], set({ k: "v".repeat(501) })))).toBe("metadata_invalid");
  });

  it("applies the 50-key limit to the merged result", () => {
    const fifty = Array.from({ length: 50 }, (_, i) => ({ k: `k${i}`, v: "v" }));
    expect(codeOf(() => mergeMetadata(fifty, set({ k0: "changed" })))).toBe("ok");
    expect(codeOf(() => mergeMetadata(fifty, set({ extra: "v" })))).toBe("metadata_invalid");
    expect(codeOf(() => mergeMetadata(fifty, set({ extra: "v", k0: "" })))).toBe("ok");
  });
});
