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
