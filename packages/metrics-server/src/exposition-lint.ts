/**
 * A parser of the Prometheus text exposition format (version 0.0.4) that reports what
 * `promtool check metrics` reports: lines that do not parse, and its lint rules (help text,
 * `_total` only on counters, snake_case names, base units, histogram shape). Used by the tests
 * of both /metrics endpoints, so no external binary is needed.
 */

type MetricType = "counter" | "gauge" | "histogram" | "summary" | "untyped";

interface Family {
  type?: MetricType;
  help?: string;
  /** Label sets seen per sample name, to find duplicates and check histograms. */
  series: Map<string, Set<string>>;
  sampleNames: Set<string>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** What Go's strconv.ParseFloat accepts (promtool parses with it): NaN and Inf in any case. */
const VALUE = /^(?:[+-]?(?:\d+\.?\d*(?:e[+-]?\d+)?|\.\d+(?:e[+-]?\d+)?|inf(?:inity)?)|nan)$/i;
const TYPES = new Set<MetricType>(["counter", "gauge", "histogram", "summary", "untyped"]);
/** Units promtool wants replaced by base units. */
const NON_BASE_UNITS: Record<string, string> = {
  milliseconds: "seconds",
  microseconds: "seconds",
  nanoseconds: "seconds",
  minutes: "seconds",
  hours: "seconds",
  days: "seconds",
  kilobytes: "bytes",
  megabytes: "bytes",
  gigabytes: "bytes",
  kibibytes: "bytes",
  mebibytes: "bytes",
  gibibytes: "bytes",
  millimeters: "meters",
  centimeters: "meters",
  kilometers: "meters",
  grams: "kilograms",
  percent: "ratio",
};
const ABBREVIATIONS = ["ms", "msec", "sec", "secs", "us", "usec", "ns", "nsec", "kb", "mb", "gb"];

/** Splits `{a="1",b="x\"y"}` into pairs; throws on bad syntax. */
function parseLabels(text: string): [string, string][] {
  const pairs: [string, string][] = [];
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf("=", i);
    if (eq < 0) throw new Error(`bad label set {${text}}`);
    const name = text.slice(i, eq).trim();
    if (!LABEL_NAME.test(name)) throw new Error(`bad label name "${name}"`);
    if (text[eq + 1] !== '"') throw new Error(`label ${name}: value must be quoted`);
    let value = "";
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === "\\") {
        const next = text[++j];
        if (next === "n") value += "\n";
        else if (next === "\\" || next === '"') value += next;
        else throw new Error(`label ${name}: bad escape \\${next}`);
      } else value += text[j];
    }
    if (j >= text.length) throw new Error(`label ${name}: unterminated value`);
    pairs.push([name, value]);
    i = j + 1;
    if (text[i] === ",") i++;
    else if (i < text.length) throw new Error(`bad label set {${text}}`);
  }
  return pairs;
}

/** The family a sample belongs to: `x_bucket`/`x_sum`/`x_count` belong to histogram or summary `x`. */
function familyOf(sample: string, families: Map<string, Family>): string {
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (!sample.endsWith(suffix)) continue;
    const base = sample.slice(0, -suffix.length);
    const type = families.get(base)?.type;
    if (type === "histogram" || (type === "summary" && suffix !== "_bucket")) return base;
  }
  return sample;
}

function lintName(name: string, family: Family): string[] {
  const problems: string[] = [];
  if (family.help === undefined || family.help === "") problems.push(`${name}: no help text`);
  if (family.type === "counter" && !name.endsWith("_total")) problems.push(`${name}: counter metrics should have "_total" suffix`);
  if (family.type !== "counter" && name.endsWith("_total")) problems.push(`${name}: non-counter metrics should not have "_total" suffix`);
  if (family.type !== "histogram" && family.type !== "summary") {
    for (const suffix of ["_bucket", "_count", "_sum"]) {
      if (name.endsWith(suffix)) problems.push(`${name}: non-histogram and non-summary metrics should not have "${suffix}" suffix`);
    }
  }
  if (/[a-z][A-Z]/.test(name)) problems.push(`${name}: metric names should be written in 'snake_case' not 'camelCase'`);
  if (name.includes(":")) problems.push(`${name}: metric names should not contain ':'`);
  const words = name.toLowerCase().split("_");
  for (const word of words) {
    const base = NON_BASE_UNITS[word];
    if (base && base !== word) problems.push(`${name}: use base unit "${base}" instead of "${word}"`);
    if (ABBREVIATIONS.includes(word)) problems.push(`${name}: metric names should not contain abbreviated units`);
  }
  return problems;
}

/** Every problem promtool would report for this exposition; [] when it is clean. */
export function lintExposition(text: string): string[] {
  const problems: string[] = [];
  const families = new Map<string, Family>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) {
      f = { series: new Map(), sampleNames: new Set() };
      families.set(name, f);
    }
    return f;
  };
  let current: string | undefined;
  const finished = new Set<string>();
  const enter = (name: string, line: number) => {
    if (current === name) return;
    if (finished.has(name)) problems.push(`line ${line}: ${name} appears again after other metrics (families must be contiguous)`);
    if (current !== undefined) finished.add(current);
    current = name;
  };

  text.split("\n").forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === "") return;
    const meta = /^#\s*(HELP|TYPE)\s+(\S+)(?:\s+(.*))?$/.exec(raw);
    if (meta) {
      const [, keyword, name, rest = ""] = meta;
      if (!NAME.test(name!)) {
        problems.push(`line ${line}: bad metric name "${name}"`);
        return;
      }
      enter(name!, line);
      const f = family(name!);
      if (keyword === "HELP") {
        if (f.help !== undefined) problems.push(`line ${line}: second HELP line for ${name}`);
        f.help = rest;
      } else {
        if (f.type !== undefined) problems.push(`line ${line}: second TYPE line for ${name}`);
        if (f.sampleNames.size > 0) problems.push(`line ${line}: TYPE line for ${name} after its samples`);
        if (!TYPES.has(rest.trim() as MetricType)) problems.push(`line ${line}: unknown type "${rest}"`);
        f.type = rest.trim() as MetricType;
      }
      return;
    }
    if (raw.startsWith("#")) return; // a comment
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?\s*$/.exec(raw);
    if (!sample) {
      problems.push(`line ${line}: cannot parse "${raw.slice(0, 80)}"`);
      return;
    }
    const [, sampleName, labelText = "", value] = sample;
    if (!VALUE.test(value!)) problems.push(`line ${line}: bad value "${value}"`);
    let labels: [string, string][];
    try {
      labels = parseLabels(labelText);
    } catch (error) {
      problems.push(`line ${line}: ${(error as Error).message}`);
      return;
    }
    const names = labels.map(([n]) => n);
    if (new Set(names).size !== names.length) problems.push(`line ${line}: repeated label name`);
    const name = familyOf(sampleName!, families);
    enter(name, line);
    const f = family(name);
    f.sampleNames.add(sampleName!);
    const key = labels
      .map(([n, v]) => `${n}=${JSON.stringify(v)}`)
      .sort()
      .join(",");
    const seen = f.series.get(sampleName!) ?? new Set<string>();
    if (seen.has(key)) problems.push(`line ${line}: duplicate series ${sampleName}{${labelText}}`);
    seen.add(key);
    f.series.set(sampleName!, seen);
    if (f.type === "histogram" && sampleName!.endsWith("_bucket") && !names.includes("le")) problems.push(`line ${line}: histogram bucket without "le"`);
  });

  for (const [name, f] of families) {
    problems.push(...lintName(name, f));
    if (f.type === "histogram") {
      // Every label set of a histogram needs its +Inf bucket, _sum and _count.
      const sets = new Set([...(f.series.get(`${name}_count`) ?? [])]);
      const infinite = new Set(
        [...(f.series.get(`${name}_bucket`) ?? [])]
          .filter((k) => /(^|,)le="\+Inf"/.test(k))
          .map((k) =>
            k
              .split(",")
              .filter((p) => !p.startsWith("le="))
              .join(","),
          ),
      );
      for (const set of sets) if (!infinite.has(set)) problems.push(`${name}: series {${set}} has no +Inf bucket`);
      for (const set of sets) if (!f.series.get(`${name}_sum`)?.has(set)) problems.push(`${name}: series {${set}} has no _sum`);
    }
  }
  return problems;
}
