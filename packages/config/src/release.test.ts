import { readdirSync, readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { RELEASE } from "./release.js";

const root = new URL("../../../", import.meta.url);
const versionOf = (path: string) => (JSON.parse(readFileSync(new URL(path, root), "utf8")) as { version: string }).version;

it("is one release for the whole repository: the root's version and every package's", () => {
  expect(RELEASE).toMatch(/^1\.4\.\d+$/);
  const packages = ["apps", "packages"].flatMap((folder) =>
    readdirSync(new URL(`${folder}/`, root), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `${folder}/${entry.name}/package.json`),
  );
  expect(packages.length).toBeGreaterThan(5);
  for (const path of ["package.json", ...packages]) expect({ path, version: versionOf(path) }).toEqual({ path, version: RELEASE });
});

it("is listed in RELEASES.md, newest first", () => {
  const headings = [...readFileSync(new URL("RELEASES.md", root), "utf8").matchAll(/^## (\d+\.\d+\.\d+)\b/gm)].map((m) => m[1]);
  expect(headings[0]).toBe(RELEASE);
  expect(headings).toContain("1.4.0");
});
