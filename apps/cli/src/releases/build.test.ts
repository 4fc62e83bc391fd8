import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildDirectory, fullCommit, ReleaseBuildError } from "./build.js";

describe("an earlier release's build", () => {
  it("is named by the full id of its commit, and kept in the launcher's cache", async () => {
    const id = await fullCommit("HEAD");
    expect(id).toMatch(/^[0-9a-f]{40}$/);
    expect(await fullCommit(id.slice(0, 10))).toBe(id);
    expect(buildDirectory({ RMS_CACHE_DIR: "/var/cache/rms" }, id)).toBe(join("/var/cache/rms", "builds", id));
  });

  it("refuses a commit this repository does not have, in one line", async () => {
    await expect(fullCommit("no-such-commit")).rejects.toThrow(new ReleaseBuildError('no commit "no-such-commit" in this repository'));
    await expect(fullCommit("--help")).rejects.toThrow(ReleaseBuildError);
  });
});
