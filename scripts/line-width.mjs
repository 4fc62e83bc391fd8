// Source lines stay within 160 characters, comments and strings included (biome's formatter wraps code at its
// `lineWidth` but never a comment or a string). Checks the files git tracks under apps/ and packages/, generated
// code aside; exits 1 naming each longer line. Usage: node scripts/line-width.mjs
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

export const LINE_WIDTH = 160;

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), "..");
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs|css|html)$/;
// Generated code (buf's, the descriptor set, the SDK's and the dashboard's API types) is written by its generators.
// apps/dashboard is formatted at 180 until its pages are restructured (biome.jsonc's override says the same).
const NOT_CHECKED = [/\/gen\//, /\/descriptor-set\.ts$/];

const files = execFileSync("git", ["ls-files", "apps", "packages"], { cwd: ROOT, encoding: "utf8" })
  .split("\n")
  .filter((path) => SOURCE.test(path) && !NOT_CHECKED.some((pattern) => pattern.test(path)));
const long = [];
for (const path of files) {
  const lines = readFileSync(resolve(ROOT, path), "utf8").split("\n");
  lines.forEach((line, index) => {
    if ([...line].length > LINE_WIDTH) long.push(`${path}:${index + 1} (${[...line].length})`);
  });
}
if (long.length > 0) {
  console.error(`Lines longer than ${LINE_WIDTH} characters (wrap the comment, split the string):\n  ${long.join("\n  ")}`);
  process.exit(1);
}
console.log(`line width: ${files.length} files within ${LINE_WIDTH} characters`);
