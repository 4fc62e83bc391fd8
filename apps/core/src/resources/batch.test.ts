import { describe, expect, it } from "vitest";
import { idTimeMs, isId } from "../ids.js";
import { idBoundAt, importedResourceId } from "./batch.js";

describe("importedResourceId", () => {
  const ms = Date.UTC(2026, 10, 28, 12, 0, 0, 123);

  it("is a resource id carrying the chunk's time, the same for the same job, line and time whatever came between", () => {
    const first = importedResourceId("job_A", 7, ms);
    expect(isId("res", first)).toBe(true);
    expect(idTimeMs(first)).toBe(ms);
    // Another job in between: the id of the first job's line is still the same (a redo after a takeover).
    const other = importedResourceId("job_B", 7, ms);
    expect(other).not.toBe(first);
    expect(importedResourceId("job_A", 7, ms)).toBe(first);
    expect(importedResourceId("job_A", 8, ms)).not.toBe(first);
  });

  it("sorts among ids by time, below the bound of a bulk job started at that time", () => {
    const earlier = importedResourceId("job_A", 61 ** 5, ms);
    const later = importedResourceId("job_A", 0, ms + 1);
    expect(earlier < later).toBe(true);
    expect(later <= idBoundAt(ms + 1)).toBe(true);
    expect(later > idBoundAt(ms)).toBe(true);
  });
});
