import type { Db } from "mongodb";

/**
 * What a step does to the release before its own (docs/migrations.md, "Expand, then contract"):
 * - `expand`: the release before still runs correctly on the data after it, and what that release writes meanwhile
 *   stays correct too. It adds (a field, an index), converts into a shape both releases read, or removes only what
 *   neither reads nor writes.
 * - `contract`: it removes or changes what the release before reads or writes. It comes at least one release after
 *   the expand that made that unused, and once it has run no release before its own may run on the data again.
 */
export type StepKind = "expand" | "contract";

/** One part of a step: a unit of work done in bounded batches (parts.ts makes the usual ones). */
export interface StepPart {
  /** What is left to do, in one line, or null when nothing is. Reads only (dry run, status). */
  pending(db: Db): Promise<string | null>;
  /**
   * Does one batch of at most `size` documents after `after` (null: from the beginning) and answers where the next
   * begins, or null once the part is done. Idempotent: a batch done again (after a crash) changes nothing more.
   */
  batch(db: Db, after: unknown, size: number): Promise<{ after: unknown; changed: number }>;
}

/** A numbered migration step: one file of `migrations/steps/`, listed in `steps/index.ts`. */
export interface MigrationStep {
  /** `NNNN-what-it-does`: its file's name; steps run in this order. */
  readonly id: string;
  /** The release that brings it (`1.4.N`). */
  readonly release: string;
  readonly kind: StepKind;
  /** One line: what it changes and why. */
  readonly summary: string;
  /** Run in order; the step's record keeps which part and where in it a killed run stopped. */
  readonly parts: readonly StepPart[];
}

/** Where a step stands: the part it is in, and the position in it its next batch begins after. */
export interface StepPosition {
  readonly part: number;
  readonly after: unknown;
}

export const START: StepPosition = { part: 0, after: null };

/** Orders two release numbers (`1.4.10` after `1.4.9`): negative, zero or positive. */
export function compareReleases(a: string, b: string): number {
  const [x, y] = [a, b].map((release) => release.split(".").map(Number));
  for (let i = 0; i < Math.max(x!.length, y!.length); i++) {
    const difference = (x![i] ?? 0) - (y![i] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}
