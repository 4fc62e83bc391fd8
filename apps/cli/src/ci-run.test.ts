// .ci/run (what CI runs) against a stand-in `npm` whose suite fails: the counts still print, the exit stays non-zero.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { repoRoot } from "./paths.js";

const bin = mkdtempSync(join(tmpdir(), "rms-ci-"));
afterAll(() => rmSync(bin, { recursive: true, force: true }));

function runCi(npmScript: string) {
  writeFileSync(join(bin, "npm"), `#!/bin/sh\n${npmScript}\n`);
  chmodSync(join(bin, "npm"), 0o755);
  return spawnSync("bash", [join(repoRoot, ".ci/run")], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}` }, encoding: "utf8" });
}

it("prints the summed counts and exits non-zero when tests fail", () => {
  const result = runCi(`printf ' Tests  3 passed | 2 failed (5)\\n Tests  4 passed (4)\\n'; exit 1`);
  expect(result.stdout.trim().split("\n").at(-1)).toBe("7 passed, 2 failed");
  expect(result.status).toBe(1);
});

it("exits zero with the counts when every test passes", () => {
  const result = runCi(`printf ' Tests  4 passed (4)\\n'`);
  expect(result.stdout.trim().split("\n").at(-1)).toBe("4 passed, 0 failed");
  expect(result.status).toBe(0);
});
