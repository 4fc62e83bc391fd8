import { describe, expect, it } from "vitest";
import { FileInvalidError, FILE_START, type RowCursor, type RowEvent, type RowFormat } from "./model.js";
import { type ReadOptions, readRows } from "./read.js";

/** The events of a read with `items: false`: each row's line and end as a full read has them, no item, no error. */
function counted(events: RowEvent[]): RowEvent[] {
  return events.map((e) => (e.kind === "row" ? { ...e, item: null, error: null } : e));
}

/** The file's bytes in chunks of `size` (1: every row split across chunks). */
async function* chunks(bytes: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function all(
  text: string | Buffer,
  format: RowFormat,
  size = 1 << 16,
  from: RowCursor = FILE_START,
  columns = null as never,
  options: ReadOptions = {},
): Promise<RowEvent[]> {
  const bytes = typeof text === "string" ? Buffer.from(text) : text;
  const events: RowEvent[] = [];
  for await (const event of readRows(chunks(bytes.subarray(from.offset), size), format, from, columns, options)) events.push(event);
  return events;
}

function rows(events: RowEvent[]) {
  return events.filter((e) => e.kind === "row").map((e) => ({ line: e.line, item: e.item, code: e.error?.code ?? null }));
}

describe("JSONL rows", () => {
  const text = '{"name":"a"}\n\n  \r\n{"name":"b","status":"paused","metadata":{"k":"v","n":1}}\r\nnot json\n[1]\n{"name":"c","extra":1}\n{"name":"é€😀"}';

  it("numbers rows by their line, skips blank lines, maps each line to an item or a row error", async () => {
    const expected = [
      { line: 1, item: { name: "a" }, code: null },
      {
        line: 4,
        item: {
          name: "b",
          status: "paused",
          metadata: [
            { k: "k", v: "v" },
            { k: "n", v: "1" },
          ],
        },
        code: null,
      },
      { line: 5, item: null, code: "parameter_invalid" },
      { line: 6, item: null, code: "parameter_invalid" },
      { line: 7, item: null, code: "parameter_unknown" },
      { line: 8, item: { name: "é€😀" }, code: null },
    ];
    expect(rows(await all(text, "jsonl"))).toEqual(expected);
    // A row (and a multi-byte character) split across chunks reads the same.
    expect(rows(await all(text, "jsonl", 1))).toEqual(expected);
    expect(rows(await all(text, "jsonl", 5))).toEqual(expected);
  });

  it("goes on from any row's end as if read from the start", async () => {
    const events = await all(text, "jsonl");
    for (const [i, event] of events.entries()) {
      const rest = await all(text, "jsonl", 3, event.end);
      expect(rest).toEqual(events.slice(i + 1));
    }
  });

  it("skips a BOM at the start of the file", async () => {
    expect(rows(await all(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"name":"a"}\n')]), "jsonl", 1))).toEqual([
      { line: 1, item: { name: "a" }, code: null },
    ]);
  });

  it("counted only (the scan): every row's line and end as a full read has them, no line parsed as JSON", async () => {
    expect(await all(text, "jsonl", 3, FILE_START, null as never, { items: false })).toEqual(counted(await all(text, "jsonl")));
  });

  it("refuses bytes that are not UTF-8, wherever they are", async () => {
    const bad = Buffer.concat([Buffer.from('{"name":"a"}\n{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}\n')]);
    await expect(all(bad, "jsonl")).rejects.toBeInstanceOf(FileInvalidError);
    await expect(all(bad, "jsonl", 1)).rejects.toBeInstanceOf(FileInvalidError);
    await expect(all(bad, "jsonl", 1, FILE_START, null as never, { items: false })).rejects.toBeInstanceOf(FileInvalidError);
    // A multi-byte sequence cut by the end of the file.
    await expect(all(Buffer.from([0x7b, 0xe2, 0x82]), "jsonl")).rejects.toBeInstanceOf(FileInvalidError);
  });
});

describe("CSV rows", () => {
  const text =
    '\uFEFFname,status,metadata[plan],"metadata[a,b]"\r\n' +
    "alpha,active,pro,\r\n" +
    "\r\n" +
    '"multi\r\nline ""quoted""",paused,,x\r\n' +
    '"comma, inside",,"",\n' + // an LF line end among CRLF ones
    ",archived,,\r\n" +
    "short,active\r\n" +
    "last,,team,y";

  const expected = [
    { line: 2, item: { name: "alpha", status: "active", metadata: [{ k: "plan", v: "pro" }] }, code: null },
    { line: 4, item: { name: 'multi\r\nline "quoted"', status: "paused", metadata: [{ k: "a,b", v: "x" }] }, code: null },
    { line: 6, item: { name: "comma, inside" }, code: null },
    // An empty cell sets nothing: the name is missing (the import's item rules fail it), status archived.
    { line: 7, item: { status: "archived" }, code: null },
    { line: 8, item: null, code: "parameter_invalid" },
    {
      line: 9,
      item: {
        name: "last",
        metadata: [
          { k: "plan", v: "team" },
          { k: "a,b", v: "y" },
        ],
      },
      code: null,
    },
  ];

  it("reads the header, quoting, CRLF and LF, a BOM, metadata columns and empty cells, by line", async () => {
    const events = await all(text, "csv");
    expect(events[0]).toMatchObject({
      kind: "header",
      columns: {
        count: 4,
        name: 0,
        status: 1,
        metadata: [
          ["plan", 2],
          ["a,b", 3],
        ],
      },
    });
    expect(rows(events)).toEqual(expected);
    expect(rows(await all(text, "csv", 1))).toEqual(expected);
    expect(rows(await all(text, "csv", 7))).toEqual(expected);
  });

  it("goes on from any row's end with the header kept", async () => {
    const events = await all(text, "csv");
    const header = events[0]!;
    if (header.kind !== "header") throw new Error("no header");
    for (const [i, event] of events.entries()) {
      const rest = await all(text, "csv", 2, event.end, header.columns as never);
      expect(rest).toEqual(events.slice(i + 1));
    }
  });

  it("counted only (the scan): every row's line and end as a full read has them; a broken file is still refused", async () => {
    expect(await all(text, "csv", 2, FILE_START, null as never, { items: false })).toEqual(counted(await all(text, "csv")));
    await expect(all('name\n"open\n', "csv", 1 << 16, FILE_START, null as never, { items: false })).rejects.toBeInstanceOf(FileInvalidError);
  });

  it("refuses a file it cannot read as an import: no name column, unknown or repeated columns, an unclosed quote, not UTF-8, empty", async () => {
    for (const bad of ["status,metadata[a]\nactive,x\n", "name,colour\na,red\n", "name,name\na,b\n", 'name\n"open\n', ""]) {
      await expect(all(bad, "csv")).rejects.toBeInstanceOf(FileInvalidError);
    }
    await expect(all(Buffer.concat([Buffer.from("name\nok\n"), Buffer.from([0xff]), Buffer.from("\n")]), "csv", 1)).rejects.toBeInstanceOf(FileInvalidError);
  });
});
