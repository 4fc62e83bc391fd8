import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module script of the build, without types.
import { BUDGET_BYTES, firstLoadScripts } from "../scripts/budget.mjs";

describe("the first-load budget check", () => {
  it("counts the entry script and every module it preloads, once each", () => {
    const html =
      '<script type="module" crossorigin src="/dashboard/assets/index-A.js"></script><link rel="modulepreload" crossorigin ' +
      'href="/dashboard/assets/vendor-B.js"><link rel="stylesheet" href="/dashboard/assets/index-C.css"><script type="module" ' +
      'src="/dashboard/assets/index-A.js"></script>';
    expect(firstLoadScripts(html)).toEqual(["/dashboard/assets/index-A.js", "/dashboard/assets/vendor-B.js"]);
    expect(BUDGET_BYTES).toBe(250 * 1024);
  });
});
