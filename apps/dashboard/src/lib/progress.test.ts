import { describe, expect, it } from "vitest";
import { formatBytes, isFinished, progressView, storageUse, uploadLabel } from "./progress";

const job = (status: "queued" | "running" | "succeeded" | "failed" | "canceled", total: number | null, processed: number, failed = 0, skipped = 0) => ({
  status,
  progress: { total, processed, failed, skipped },
});

describe("job progress", () => {
  it("is indeterminate until the job knows its total", () => {
    expect(progressView(job("queued", null, 0))).toEqual({ percent: null, done: 0, total: null, label: "0 processed" });
  });

  it("counts processed of total, with failures and skips, rounded down", () => {
    expect(progressView(job("running", 3, 2, 1)).label).toBe("2 of 3 processed, 1 failed (66%)");
    expect(progressView(job("running", 1_000_000, 999_999, 0, 12)).label).toBe("999,999 of 1,000,000 processed, 12 skipped (99%)");
  });

  it("is complete when the job succeeded, even over an empty set", () => {
    expect(progressView(job("succeeded", 0, 0)).percent).toBe(100);
    expect(progressView(job("succeeded", 3, 3)).label).toBe("3 of 3 processed (100%)");
  });

  it("stops polling only once finished", () => {
    expect(["queued", "running"].map(isFinished)).toEqual([false, false]);
    expect(["succeeded", "failed", "canceled"].map(isFinished)).toEqual([true, true, true]);
  });

  it("shows an upload's bytes sent", () => {
    expect(uploadLabel(512 * 1024, 2 * 1024 * 1024)).toBe("512.0 KB of 2.0 MB sent (25%)");
    expect(uploadLabel(0, 0)).toBe("0 B of 0 B sent (100%)");
  });
});

describe("storage use", () => {
  it("says what is stored of the quota, in GB past a GiB, and its share", () => {
    expect(storageUse(1536 * 1024, 10 * 1024 ** 3)).toEqual({ percent: 0, label: "1.5 MB of 10.0 GB used (0%)" });
    expect(storageUse(10 * 1024 ** 3, 10 * 1024 ** 3)).toEqual({ percent: 100, label: "10.0 GB of 10.0 GB used (100%)" });
    expect(storageUse(3, 4).percent).toBe(75);
    expect(formatBytes(1024 ** 3 - 1)).toBe("1024.0 MB");
  });
});
