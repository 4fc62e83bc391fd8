// What each delivery answered 2xx more than once is laid to: the fault that came last before its first answer's
// record could be written. A delivery is sent again only when its attempt was not recorded, and what cuts a record
// off is a fault: a worker SIGKILLed just after the POST was answered, or the primary frozen, killed or cut off
// while the record waited for it.
import type { FaultAt } from "./log.js";

/** How long after a POST's answer its record may still be unwritten when all is well (s). */
export const RECORD_WINDOW_S = 2;
/** How far back a fault of the database may have held the records of POSTs answered since (s): a freeze and its election. */
export const HOLD_WINDOW_S = 30;

export interface RepeatedDeliveries {
  /** Repeats (2xx answers beyond the first of an event) by the fault they are laid to, `none` when none came near. */
  readonly by_fault: Record<string, number>;
  /** Seconds from an event's first 2xx answer to its second, each repeated event, sorted. */
  readonly seconds_to_repeat: number[];
}

/** Lays every repeat of `answeredAt` (event id -> its 2xx answers' times) to the last fault at most RECORD_WINDOW_S after its first answer. */
export function repeatedDeliveries(answeredAt: ReadonlyMap<string, readonly number[]>, faults: readonly FaultAt[]): RepeatedDeliveries {
  const byFault: Record<string, number> = {};
  const gaps: number[] = [];
  for (const times of answeredAt.values()) {
    if (times.length < 2) continue;
    const first = times[0]!;
    const cause = faults.filter((f) => cutsOffRecords(f) && f.at_s <= first + RECORD_WINDOW_S && f.at_s >= first - HOLD_WINDOW_S).at(-1);
    const what = cause?.what ?? "none";
    byFault[what] = (byFault[what] ?? 0) + times.length - 1;
    gaps.push(Math.round((times[1]! - first) * 10) / 10);
  }
  return { by_fault: byFault, seconds_to_repeat: gaps.sort((a, b) => a - b) };
}

/** A worker's records are cut off by its own death or by its primary's faults; core's and the gateways' are not theirs. */
function cutsOffRecords(fault: FaultAt): boolean {
  return fault.target === "worker" || fault.target === "primary";
}
