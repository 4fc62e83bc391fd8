import { describe, expect, it } from "vitest";
import { oneReadAtATime } from "./live";

describe("a stream's items refresh a list one read at a time", () => {
  it("reads once per item when items come apart", async () => {
    let reads = 0;
    const refresh = oneReadAtATime(async () => {
      reads++;
    });
    await refresh();
    await refresh();
    expect(reads).toBe(2);
  });

  it("reads once more after a read during which items came, however many", async () => {
    const pending: (() => void)[] = [];
    let reads = 0;
    const refresh = oneReadAtATime(
      () =>
        new Promise<void>((resolve) => {
          reads++;
          pending.push(resolve);
        }),
    );
    const first = refresh();
    void refresh();
    void refresh();
    void refresh();
    expect(reads).toBe(1);
    pending.shift()!();
    await new Promise((r) => setTimeout(r, 0));
    expect(reads).toBe(2);
    pending.shift()!();
    await first;
    expect(reads).toBe(2);
  });

  it("stops after the read in flight once stopped", async () => {
    const pending: (() => void)[] = [];
    let reads = 0;
    let stopped = false;
    const refresh = oneReadAtATime(
      () =>
        new Promise<void>((resolve) => {
          reads++;
          pending.push(resolve);
        }),
      () => stopped,
    );
    const first = refresh();
    void refresh();
    stopped = true;
    pending.shift()!();
    await first;
    expect(reads).toBe(1);
  });
});
