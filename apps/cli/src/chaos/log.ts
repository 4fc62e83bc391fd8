// The chaos run's clock: its progress lines on stderr carry the seconds since the run began.
/** When the run began (ms since the epoch). */
export const startedAt = Date.now();

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Seconds since the run began. */
export const elapsedSeconds = () => (Date.now() - startedAt) / 1000;

export const log = (line: string) => process.stderr.write(`chaos ${elapsedSeconds().toFixed(1)}s: ${line}\n`);

/** What a fault hit: a process of the stack, or the replica set's primary. */
export type FaultTarget = "core" | "gateway" | "worker" | "primary";

/** A fault the run caused, when it came (seconds since the run began): what a repeated delivery is laid to. */
export interface FaultAt {
  readonly at_s: number;
  readonly target: FaultTarget;
  readonly what: string;
}

/** Every fault of the run in the order they came (kills, the database's faults, partitions). */
export const faultTimeline: FaultAt[] = [];

export function noteFault(target: FaultTarget, what: string): void {
  faultTimeline.push({ at_s: elapsedSeconds(), target, what });
}
