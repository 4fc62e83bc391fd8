import { spawnSync } from "node:child_process";

/** The value of one series in a Prometheus text exposition (`name{labels}` exactly as written), or undefined when absent. */
export function seriesValue(text: string, series: string): number | undefined {
  for (const line of text.split("\n")) {
    if (line.startsWith(`${series} `))
      return Number(
        line
          .slice(series.length + 1)
          .trim()
          .split(" ")[0],
      );
  }
  return undefined;
}

/** True when `promtool` (Prometheus's own checker) is on the PATH. */
export const promtoolInstalled = spawnSync("promtool", ["--version"], { stdio: "ignore" }).status === 0;

/** What `promtool check metrics` says of an exposition: its exit status and output. */
export function promtoolCheck(text: string): { status: number | null; output: string } {
  const run = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}
