import { describe, expect, it } from "vitest";
import { SseParser } from "./sse.js";

/** Every message of `text` fed in pieces cut at each of `cuts`. */
function parse(text: string, cuts: number[] = []): { data: string; event: string; lastEventId: string }[] {
  const parser = new SseParser();
  const out = [];
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    out.push(...parser.push(text.slice(from, cut)));
    from = cut;
  }
  return out;
}

describe("SseParser", () => {
  const stream = 'id: evt_1\nevent: resource.created\ndata: {"id":"evt_1"}\n\n: keep-alive\n\nid: evt_2\nevent: resource.updated\ndata: {"id":"evt_2"}\n\n';

  it("reads the API's frames, skipping comments", () => {
    expect(parse(stream)).toEqual([
      { data: '{"id":"evt_1"}', event: "resource.created", lastEventId: "evt_1" },
      { data: '{"id":"evt_2"}', event: "resource.updated", lastEventId: "evt_2" },
    ]);
  });

  it("reads the same wherever the text is cut, one character at a time included", () => {
    const whole = parse(stream);
    for (let cut = 1; cut < stream.length; cut++) expect(parse(stream, [cut])).toEqual(whole);
    expect(
      parse(
        stream,
        Array.from({ length: stream.length - 1 }, (_, i) => i + 1),
      ),
    ).toEqual(whole);
  });

  it("ends lines at CRLF, LF or CR alike, a CRLF cut between its two characters included", () => {
    const crlf = "id: a\r\ndata: x\r\n\r\nid: b\rdata: y\r\rdata: z\n\n";
    const expected = [
      { data: "x", event: "message", lastEventId: "a" },
      { data: "y", event: "message", lastEventId: "b" },
      { data: "z", event: "message", lastEventId: "b" },
    ];
    expect(parse(crlf)).toEqual(expected);
    expect(parse(crlf, [6])).toEqual(expected);
    expect(parse(crlf, [6, 7, 15, 16])).toEqual(expected);
  });

  it("joins data lines with LF, drops one space after the colon only, and keeps the last id for the messages after it", () => {
    expect(parse("data:  two spaces\ndata:none\ndata\n\nid: z\n\ndata: after\n\n")).toEqual([
      { data: " two spaces\nnone\n", event: "message", lastEventId: "" },
      { data: "after", event: "message", lastEventId: "z" },
    ]);
  });

  it("dispatches nothing for a block without data, nor for text not ended by a blank line", () => {
    expect(parse("event: x\n\nid: q\n\ndata: unfinished\n")).toEqual([]);
  });

  it("takes a retry time of digits only, and ignores an id holding NULL", () => {
    const parser = new SseParser();
    parser.push("retry: 1500\nretry: soon\nid: a\u0000b\ndata: x\n\n");
    expect(parser.retryMs).toBe(1500);
    expect(parser.lastEventId).toBe("");
  });
});
