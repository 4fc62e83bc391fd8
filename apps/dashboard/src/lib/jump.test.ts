import { describe, expect, it } from "vitest";
import { jumpTarget } from "./jump";

describe("jump to an id", () => {
  it("opens the page of every kind the API shows, trimmed", () => {
    expect(jumpTarget(" evt_0Vd0dwV9KSsnTzOdGw5NqK ")).toEqual({ to: "/events/$id", id: "evt_0Vd0dwV9KSsnTzOdGw5NqK" });
    for (const [prefix, to] of [
      ["res", "/resources/$id"],
      ["we", "/webhooks/$id"],
      ["job", "/jobs/$id"],
      ["file", "/files/$id"],
      ["req", "/request-logs/$id"],
    ]) {
      expect(jumpTarget(`${prefix}_abc123`)).toEqual({ to, id: `${prefix}_abc123` });
    }
    expect(jumpTarget("key_abc")).toEqual({ to: "/keys", id: "key_abc" });
  });

  it("says why for anything else", () => {
    expect(jumpTarget("acct_123")).toEqual({ problem: "No page shows acct_ ids: try res_, evt_, we_, job_, file_ or req_." });
    expect("problem" in jumpTarget("hello world")).toBe(true);
    expect("problem" in jumpTarget("evt_")).toBe(true);
  });
});
