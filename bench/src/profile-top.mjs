#!/usr/bin/env node
// Reads a V8 CPU profile (`BENCH_PROFILE=1` writes them into bench/results/profiles/) and prints where the busy time
// went: the top frames by self time, and the self time by package (node_modules/<package>, node: internals, or the
// project's own files), each as a share of the busy (non-idle) time.
//   node bench/src/profile-top.mjs <file.cpuprofile> [frames, default 25]
import { readFileSync } from "node:fs";

const [file, count = "25"] = process.argv.slice(2);
if (!file) {
  process.stderr.write("usage: profile-top.mjs <file.cpuprofile> [frames]\n");
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUs = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i];
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}

const IDLE = new Set(["(idle)", "(program)"]);
/** Where a frame's code lives: a package of node_modules, node's own, V8's, or the project's app or package. */
function placeOf(url) {
  if (!url) return "(native/V8)";
  if (url.startsWith("node:")) return "node:internals";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  const own = /\/(apps\/[^/]+|packages\/[^/]+)\//.exec(url);
  return own ? own[1] : url;
}

const frames = new Map();
const places = new Map();
let busy = 0;
for (const [id, us] of selfUs) {
  const { callFrame } = byId.get(id);
  if (IDLE.has(callFrame.functionName)) continue;
  busy += us;
  const where = callFrame.url ? `${callFrame.url.replace(/^.*\/(node_modules|apps|packages)\//, "$1/")}:${callFrame.lineNumber + 1}` : "";
  const key = `${callFrame.functionName || "(anonymous)"} ${where}`.trim();
  frames.set(key, (frames.get(key) ?? 0) + us);
  const place = callFrame.functionName === "(garbage collector)" ? "(garbage collector)" : placeOf(callFrame.url);
  places.set(place, (places.get(place) ?? 0) + us);
}
const pct = (us) => `${((100 * us) / busy).toFixed(1)} %`;
const top = (map, n) => [...map].sort((a, b) => b[1] - a[1]).slice(0, n);
process.stdout.write(`${file}: busy ${(busy / 1e6).toFixed(2)} s of ${((profile.endTime - profile.startTime) / 1e6).toFixed(2)} s\n\nby place:\n`);
for (const [place, us] of top(places, 20)) process.stdout.write(`  ${pct(us).padStart(7)}  ${place}\n`);
process.stdout.write(`\ntop ${count} frames by self time:\n`);
for (const [frame, us] of top(frames, Number(count))) process.stdout.write(`  ${pct(us).padStart(7)}  ${frame}\n`);
