/**
 * Test-only crash points. Off unless RMS_FAULTS names them, e.g.
 * `RMS_FAULTS=resource.create:1` (always) or `resource.create:0.05` (5% of calls):
 * the process kills itself with SIGKILL right after the database write and before
 * it answers, the worst moment for exactly-once (`file.create`: after an uploaded file's document, before the
 * key's record). Used by the fault tests and `npm run chaos`.
 * Between the writes of a call under an Idempotency-Key (grpc/idempotent.ts), whatever the call: `keyed.locked` once
 * its key's lock is taken, `keyed.executed` once its writes are made, `keyed.recorded` once its answer is recorded (in
 * one commit: before the commit, whose own fault point is the write's, after it).
 * `writes.w1` is no crash point: it weakens core's writes to write concern 1 (acknowledged by the primary
 * alone), the deliberately weakened build `npm run chaos -- --cluster --weaken` runs to show that its history
 * checker finds the anomalies majority writes prevent (docs/scaling.md).
 */
export const FAULT_POINTS = ["resource.create", "file.create", "keyed.locked", "keyed.executed", "keyed.recorded", "writes.w1"] as const;
export type FaultPoint = (typeof FAULT_POINTS)[number];

export interface Faults {
  /** Called after a committed write; may not return. */
  afterWrite(point: FaultPoint): void;
  /** `writes.w1`: core's database client writes with write concern 1. */
  readonly weakWrites?: boolean;
}

export const NO_FAULTS: Faults = { afterWrite: () => undefined };

/** Parses `point:probability[,point:probability]`; throws with a message naming the bad part. */
export function parseFaults(spec: string | undefined, random: () => number = Math.random): Faults {
  if (!spec) return NO_FAULTS;
  const odds = new Map<FaultPoint, number>();
  for (const part of spec.split(",")) {
    const [point, probability] = part.trim().split(":");
    const p = Number(probability ?? "1");
    if (!(FAULT_POINTS as readonly string[]).includes(point ?? "") || !(p >= 0 && p <= 1)) {
      throw new Error(`must be point:probability with a point in ${FAULT_POINTS.join(", ")} (got '${part}')`);
    }
    odds.set(point as FaultPoint, p);
  }
  return {
    ...(odds.get("writes.w1") ? { weakWrites: true } : {}),
    afterWrite(point) {
      const p = odds.get(point);
      if (p !== undefined && random() < p) process.kill(process.pid, "SIGKILL");
    },
  };
}
