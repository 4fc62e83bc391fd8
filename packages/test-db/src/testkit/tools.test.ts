import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { installedTool } from "./tools.js";

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
  delete process.env["RMS_TEST_TOOL"];
});

/** A directory holding an executable `name`. */
function withTool(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), "rms-tool-"));
  made.push(dir);
  writeFileSync(join(dir, name), "#!/bin/sh\n");
  chmodSync(join(dir, name), 0o755);
  return dir;
}

it("installedTool: the env variable's path first, then the PATH; null when neither has it", () => {
  expect(installedTool("rms-no-such-tool", "RMS_TEST_TOOL")).toBeNull();
  const onPath = withTool("rms-test-tool");
  const path = process.env["PATH"];
  process.env["PATH"] = `${onPath}:${path}`;
  try {
    expect(installedTool("rms-test-tool", "RMS_TEST_TOOL")).toBe(join(onPath, "rms-test-tool"));
    const named = join(withTool("elsewhere"), "elsewhere");
    process.env["RMS_TEST_TOOL"] = named;
    expect(installedTool("rms-test-tool", "RMS_TEST_TOOL")).toBe(named);
  } finally {
    process.env["PATH"] = path;
  }
});
