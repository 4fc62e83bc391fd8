import { describe, expect, it } from "vitest";
import { eventMatches, oneReadAtATime, requestLogMatches } from "./live";

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

describe("what a page's stream follower lets through", () => {
  it("matches events by type, prefix and object", () => {
    const event = { type: "resource.updated", data: { object: { id: "res_1" } } } as never;
    expect(eventMatches(event, {})).toBe(true);
    expect(eventMatches(event, { types: ["resource.*"] })).toBe(true);
    expect(eventMatches(event, { types: ["resource.created"] })).toBe(false);
    expect(eventMatches(event, { object: "res_1" })).toBe(true);
    expect(eventMatches(event, { types: ["job.*"], object: "res_1" })).toBe(false);
  });

  it("matches request logs by the list's filters", () => {
    const log = { status: 404, method: "GET", path: "/v1/resources/res_1", error_code: "resource_missing", api_key: "key_1", idempotency_key: null } as never;
    expect(requestLogMatches(log, {})).toBe(true);
    expect(requestLogMatches(log, { status: "4xx", method: "GET" })).toBe(true);
    expect(requestLogMatches(log, { status: "404", path: "/v1/resources/res_1/" })).toBe(true);
    expect(requestLogMatches(log, { status: "5xx" })).toBe(false);
    expect(requestLogMatches(log, { api_key: "key_2" })).toBe(false);
    expect(requestLogMatches(log, { idempotency_key: "k" })).toBe(false);
  });
});
