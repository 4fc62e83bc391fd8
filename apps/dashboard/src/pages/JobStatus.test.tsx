import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { itemPlace } from "./JobDetail";
import { JobStatus } from "./Jobs";

describe("a job's status and errors as the pages say them", () => {
  it("a job that finished with failed rows says so, not a plain succeeded", () => {
    const progress = { total: 5, processed: 5, failed: 2, skipped: 0 };
    expect(renderToStaticMarkup(<JobStatus job={{ status: "succeeded", progress }} />)).toContain("succeeded with 2 errors");
    expect(renderToStaticMarkup(<JobStatus job={{ status: "succeeded", progress: { ...progress, failed: 1 } }} />)).toContain("succeeded with 1 error<");
    expect(renderToStaticMarkup(<JobStatus job={{ status: "succeeded", progress: { ...progress, failed: 0 } }} />)).toContain(">succeeded<");
    expect(renderToStaticMarkup(<JobStatus job={{ status: "failed", progress }} />)).toContain(">failed<");
  });

  it("an import's error by its line in the file (1-based), a bulk job's by its match", () => {
    expect(itemPlace({ index: 16, line: 18 })).toBe("line 18");
    expect(itemPlace({ index: 0 })).toBe("match 1");
  });
});
