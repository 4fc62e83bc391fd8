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
