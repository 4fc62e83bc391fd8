import { describe, expect, it } from "vitest";
import { repeatedDeliveries } from "./duplicates.js";
import type { FaultAt } from "./log.js";

describe("repeated deliveries laid to their faults", () => {
  it("takes the last fault of a worker or the primary before the first answer's record was due; none near: `none`; a single answer is no repeat", () => {
    const faults: FaultAt[] = [
      { at_s: 10, target: "primary", what: "SIGSTOP of the primary" },
      { at_s: 50.5, target: "worker", what: "SIGKILL of a worker" },
      { at_s: 51, target: "gateway", what: "SIGKILL of a gateway" },
      { at_s: 200, target: "core", what: "SIGKILL of a core" },
    ];
    const answered = new Map([
      ["evt_a", [50.2, 111]], // the worker killed 0.3 s after this answer
      ["evt_b", [20, 80, 140]], // answered while the primary was frozen: two repeats
      ["evt_c", [120, 181.5]], // no fault within the windows
      ["evt_d", [60]],
    ]);
    expect(repeatedDeliveries(answered, faults)).toEqual({
      by_fault: { "SIGKILL of a worker": 1, "SIGSTOP of the primary": 2, none: 1 },
      seconds_to_repeat: [60, 60.8, 61.5],
    });
  });
});
