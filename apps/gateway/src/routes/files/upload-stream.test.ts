import { describe, expect, it } from "vitest";
import { coalesce } from "./upload-stream.js";

/** Pieces of `size` bytes, the clock moved by `gapMs` before each. */
function slowSource(count: number, size: number, gapMs: number, clock: { now: number }): AsyncIterable<Uint8Array> {
  return (async function* () {
    for (let i = 0; i < count; i++) {
      clock.now += gapMs;
      yield Buffer.alloc(size, i);
    }
  })();
}

async function sizes(source: AsyncIterable<Uint8Array>): Promise<number[]> {
  const out: number[] = [];
  for await (const piece of source) out.push(piece.length);
  return out;
}

describe("coalesce", () => {
  it("a fast source: messages of at most `bytes`, sent once `bytes` are held", async () => {
    const clock = { now: 0 };
    expect(await sizes(coalesce(slowSource(10, 300, 0, clock), 1000, 1000, () => clock.now))).toEqual([1000, 200, 1000, 200, 600]);
  });

  it("a slow source: bytes held as long as the flush time go on with the next piece, so a slow client's bytes reach core as they come", async () => {
    const clock = { now: 0 };
    // 7 bytes every 400 ms: every third piece finds the oldest held one 800 ms old, the fourth 1,200 ms: sent.
    const out = await sizes(coalesce(slowSource(12, 7, 400, clock), 256 * 1024, 1000, () => clock.now));
    expect(out.reduce((a, b) => a + b, 0)).toBe(84);
    expect(out).toEqual([28, 28, 28]);
  });
});
