import type { LiveStream, StreamOptions } from "@rms/sdk";
import { describe, expect, it } from "vitest";
import { type StreamListener, type StreamState, sharedStream } from "./stream-hub";

/** A scripted stream: `push` gives it an item, `fail` ends it with an error; records its options and whether it closed. */
function scripted() {
  const opened: { options: StreamOptions; closed: boolean; push(item: string): void; fail(): void }[] = [];
  const open = (options: StreamOptions): LiveStream<string> => {
    const queue: string[] = [];
    let wake: (() => void) | null = null;
    let failed = false;
    const record = {
      options,
      closed: false,
      push(item: string) {
        queue.push(item);
        wake?.();
      },
      fail() {
        failed = true;
        wake?.();
      },
    };
    opened.push(record);
    return {
      lastEventId: undefined,
      lastResponse: undefined,
      close() {
        record.closed = true;
        wake?.();
      },
      async *[Symbol.asyncIterator]() {
        while (!record.closed) {
          if (failed) throw new Error("refused");
          const item = queue.shift();
          if (item !== undefined) yield item;
          else await new Promise<void>((resolve) => (wake = resolve));
        }
      },
    } as unknown as LiveStream<string>;
  };
  return { open, opened };
}

function listener() {
  const seen = { items: [] as string[], opened: 0, states: [] as StreamState[] };
  const l: StreamListener<string> = { item: (i) => seen.items.push(i), opened: () => seen.opened++, state: (s) => seen.states.push(s) };
  return { l, seen };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe("a stream the tab's pages share", () => {
  it("opens one connection for every follower, tells each its items, and closes after the last leaves", async () => {
    const { open, opened } = scripted();
    const shared = sharedStream(open, { hidden: () => false, onChange: () => {} });
    const a = listener();
    const b = listener();
    const leaveA = shared.subscribe(a.l);
    const leaveB = shared.subscribe(b.l);
    expect(opened).toHaveLength(1);
    opened[0]!.options.onOpen?.({} as never);
    opened[0]!.push("evt_1");
    await tick();
    expect(a.seen).toMatchObject({ items: ["evt_1"], opened: 1 });
    expect(b.seen).toMatchObject({ items: ["evt_1"], opened: 1 });
    expect(b.seen.states.at(-1)).toBe("open");
    leaveA();
    expect(opened[0]!.closed).toBe(false);
    leaveB();
    expect(opened[0]!.closed).toBe(true);
  });

  it("closes while the tab is hidden and opens again when it is shown", async () => {
    const { open, opened } = scripted();
    let hidden = false;
    let changed = () => {};
    const shared = sharedStream(open, { hidden: () => hidden, onChange: (l) => (changed = l) });
    const a = listener();
    shared.subscribe(a.l);
    hidden = true;
    changed();
    expect(opened[0]!.closed).toBe(true);
    expect(a.seen.states.at(-1)).toBe("off");
    hidden = false;
    changed();
    expect(opened).toHaveLength(2);
    opened[1]!.options.onOpen?.({} as never);
    expect(a.seen.opened).toBe(1);
  });

  it("says when it could not open, and the next follower tries again", async () => {
    const { open, opened } = scripted();
    const shared = sharedStream(open, { hidden: () => false, onChange: () => {} });
    const a = listener();
    shared.subscribe(a.l);
    opened[0]!.fail();
    await tick();
    expect(a.seen.states.at(-1)).toBe("failed");
    shared.subscribe(listener().l);
    expect(opened).toHaveLength(2);
  });
});
