// Loaded into a process with `--import` (files-memory.mjs, MEMORY_PROBE=1): samples process.memoryUsage() every 20 ms
// and keeps, per phase, the sample at the peak RSS and each field's own peak; SIGUSR2 writes them to
// MEMORY_PROBE_FILE and starts the next phase. What the RSS holds shows apart: V8's heap (heapUsed, heapTotal) and
// the bytes outside it (external, arrayBuffers: Buffers). MEMORY_PROBE_LIVE=1: a full collection before each sample
// (every 200 ms), so the figures are what is alive, not what waits for a collection (it slows the process).
import { writeFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

const file = process.env.MEMORY_PROBE_FILE;
const FIELDS = ["rss", "heapTotal", "heapUsed", "external", "arrayBuffers"];
let atPeak = process.memoryUsage();
let peaks = { ...atPeak };
const LIVE = process.env.MEMORY_PROBE_LIVE === "1";
setFlagsFromString("--expose-gc");
const gc = LIVE ? runInNewContext("gc") : () => {};
const timer = setInterval(
  () => {
    gc();
    const now = process.memoryUsage();
    if (now.rss > atPeak.rss) atPeak = now;
    for (const field of FIELDS) peaks[field] = Math.max(peaks[field], now[field]);
  },
  LIVE ? 200 : 20,
);
timer.unref();
process.on("SIGUSR2", () => {
  const mib = (usage) => Object.fromEntries(FIELDS.map((field) => [field, Math.round((usage[field] / 1024 / 1024) * 10) / 10]));
  writeFileSync(file, JSON.stringify({ atPeakRss: mib(atPeak), peaks: mib(peaks), now: mib(process.memoryUsage()) }));
  atPeak = process.memoryUsage();
  peaks = { ...atPeak };
});
