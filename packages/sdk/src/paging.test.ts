import { describe, expect, it } from "vitest";
import { listCall, searchCall } from "./paging.js";
import { withLastResponse } from "./response.js";

const info = { statusCode: 200, requestId: "req_1", headers: {} };

describe("list and search calls", () => {
  it("answer one page when awaited, asked for once, and every item when iterated, the filters on each page", async () => {
    const asked: Record<string, unknown>[] = [];
    const ids = Array.from({ length: 5 }, (_, i) => `res_${5 - i}`);
    const call = listCall(
      async (params) => {
        asked.push({ ...params });
        const after = params?.["starting_after"];
        const from = after === undefined ? 0 : ids.indexOf(String(after)) + 1;
        const data = ids.slice(from, from + 2).map((id) => ({ id }));
        return withLastResponse({ object: "list" as const, has_more: from + 2 < ids.length, data }, info);
      },
      { status: "active", limit: 2 },
    );
    const page = await call;
    expect(page.data.map((r) => r.id)).toEqual(["res_5", "res_4"]);
    expect(page.lastResponse.requestId).toBe("req_1");
    const walked: string[] = [];
    for await (const item of call) walked.push((item as { id: string }).id);
    expect(walked).toEqual(ids);
    expect(asked).toEqual([
      { status: "active", limit: 2 },
      { status: "active", limit: 2, starting_after: "res_4" },
      { status: "active", limit: 2, starting_after: "res_2" },
    ]);
  });

  it("follow next_page through empty search pages until has_more is false", async () => {
    const pages = [
      { data: [{ id: "a" }], next_page: "p2", has_more: true },
      { data: [], next_page: "p3", has_more: true },
      { data: [{ id: "b" }], next_page: null, has_more: false },
    ];
    const asked: unknown[] = [];
    const call = searchCall(
      async (params) => {
        asked.push(params?.["page"]);
        const page = pages[asked.length - 1]!;
        return withLastResponse({ object: "search_result" as const, ...page }, info);
      },
      { query: "status:'active'" },
    );
    const walked: string[] = [];
    for await (const item of call) walked.push((item as { id: string }).id);
    expect(walked).toEqual(["a", "b"]);
    expect(asked).toEqual([undefined, "p2", "p3"]);
  });
});
