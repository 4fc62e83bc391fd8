import { Metadata } from "@grpc/grpc-js";
import type { CallContext } from "@rms/proto";
import { describe, expect, it } from "vitest";
import { budgetOf, DEADLINE_MARGIN_MS } from "./budget.js";

const contextOf = (deadline: number, signal = new AbortController().signal): CallContext => ({
  method: "/x",
  metadata: new Metadata(),
  signal,
  deadline,
  caller: null,
});

describe("a call's budget", () => {
  it("gives each database command the time left before the caller's deadline, less the margin", () => {
    const budget = budgetOf(contextOf(10_000), () => 4_000);
    expect(budget.db()).toEqual({ timeoutMS: 6_000 - DEADLINE_MARGIN_MS });
    expect(() => budget.beforeWrite()).not.toThrow();
  });

  it("refuses a write, and any command, once the margin is reached: nothing is done (UNAVAILABLE)", () => {
    const budget = budgetOf(contextOf(10_000), () => 10_000 - DEADLINE_MARGIN_MS);
    expect(() => budget.beforeWrite()).toThrow(expect.objectContaining({ code: "service_unavailable", grpcCode: 14 }));
    expect(() => budget.db()).toThrow(expect.objectContaining({ code: "service_unavailable" }));
  });

  it("says the deadline was exceeded, naming the caller's deadline as core saw it on arrival", () => {
    let clock = 4_000;
    const budget = budgetOf(contextOf(10_000), () => clock);
    clock = 9_600;
    expect(() => budget.db()).toThrow(expect.objectContaining({ code: "service_unavailable", grpcCode: 14 }));
    expect(() => budget.beforeWrite()).toThrow(/^Deadline exceeded: the call's 6 s deadline left core no time to finish it/);
  });

  it("refuses once the caller has cancelled, even without a deadline", () => {
    const cancelled = new AbortController();
    const budget = budgetOf(contextOf(Infinity, cancelled.signal));
    expect(budget.db()).toEqual({});
    cancelled.abort();
    expect(() => budget.beforeWrite()).toThrow(expect.objectContaining({ code: "service_unavailable" }));
  });
});
