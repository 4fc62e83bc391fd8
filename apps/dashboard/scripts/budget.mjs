// The first load's JavaScript budget (CONTRACT.md section 13): at most 250 KB gzipped. Sums, gzipped, every
// script index.html loads (the entry and the modules it preloads); fails the build beyond the budget.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";

export const BUDGET_BYTES = 250 * 1024;

/** The scripts a page loads at once: `<script src>` and `<link rel="modulepreload">` of index.html. */
export function firstLoadScripts(html) {
  const srcs = [...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g), ...html.matchAll(/<link[^>]*rel="modulepreload"[^>]*href="([^"]+)"/g)].map((m) => m[1]);
  return [...new Set(srcs)];
}

export function firstLoadBytes(distUrl) {
  const html = readFileSync(new URL("index.html", distUrl), "utf8");
  return firstLoadScripts(html).map((src) => {
    const file = new URL(src.replace(/^\/dashboard\//, ""), distUrl);
    return { src, gzipped: gzipSync(readFileSync(file), { level: 9 }).length };
  });
}

/** The gzipped size of the API client's own browser build (@rms/sdk checks its budget of 25 KB when it builds). */
export function sdkBytes() {
  const browserBuild = createRequire(import.meta.url)
    .resolve("@rms/sdk/package.json")
    .replace(/package\.json$/, "dist/browser.js");
  return gzipSync(readFileSync(browserBuild), { level: 9 }).length;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const scripts = firstLoadBytes(new URL("../dist/", import.meta.url));
  const total = scripts.reduce((sum, s) => sum + s.gzipped, 0);
  const line =
    `dashboard: first-load JavaScript ${(total / 1024).toFixed(1)} KB gzipped (budget ${BUDGET_BYTES / 1024} KB) in ${scripts.length} ` +
    `file(s); its API client @rms/sdk: ${(sdkBytes() / 1024).toFixed(1)} KB gzipped`;
  if (scripts.length === 0 || total > BUDGET_BYTES) {
    console.error(`${line}: over budget or none found`);
    process.exit(1);
  }
  console.log(line);
}
