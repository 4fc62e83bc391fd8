// The SDK's builds, from src/ (types come from tsc into dist/types/):
//   dist/browser.js  ES module for browsers and bundlers (fetch, WebCrypto), minified: at most 25 KB gzipped, checked here
//   dist/node.js     ES module for Node 20+ (node:https with the client's `ca`, paths as files)
//   dist/node.cjs    the same as CommonJS, for `require("@rms/sdk")`
// Nothing is imported at run time but the platform's own modules: the package has no dependencies.
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { rolldown } from "rolldown";

export const BROWSER_BUDGET_BYTES = 25 * 1024;

const root = new URL("../", import.meta.url);
const at = (path) => new URL(path, root).pathname;

const builds = [
  { input: "src/index.ts", platform: "browser", outputs: [{ file: "dist/browser.js", format: "esm", minify: true }] },
  {
    input: "src/node.ts",
    platform: "node",
    outputs: [
      { file: "dist/node.js", format: "esm" },
      { file: "dist/node.cjs", format: "cjs" },
    ],
  },
];

for (const build of builds) {
  const bundle = await rolldown({ input: at(build.input), platform: build.platform, external: [/^node:/], logLevel: "warn" });
  for (const output of build.outputs) await bundle.write({ ...output, file: at(output.file) });
  await bundle.close();
}

const browser = readFileSync(at("dist/browser.js"));
if (/\bfrom\s*["']node:|require\(["']node:/.test(browser.toString())) {
  console.error("sdk: the browser build imports a Node module");
  process.exit(1);
}
const gzipped = gzipSync(browser, { level: 9 }).length;
const line =
  `sdk: browser build ${(gzipped / 1024).toFixed(1)} KB gzipped (${(browser.length / 1024).toFixed(1)} KB minified; budget ` +
  `${BROWSER_BUDGET_BYTES / 1024} KB)`;
if (gzipped > BROWSER_BUDGET_BYTES) {
  console.error(`${line}: over budget`);
  process.exit(1);
}
console.log(line);
