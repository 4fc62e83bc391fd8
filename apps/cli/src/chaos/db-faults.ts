// The database faults of `npm run chaos -- --cluster`: the replica set's primary SIGKILLed (another member is
// elected; the cluster's supervisor starts the killed one again on its files and port, and it rejoins) and the
// primary frozen by SIGSTOP for longer than an election takes, then SIGCONT (it comes back as a stale primary,
// steps down and rolls back what no majority had). One fault at a time, each once the set is whole again; and a
// watcher that counts the elections it sees.
import type { ReplicaSetMember, RunningReplicaSet } from "@rms/test-db";
import { log, noteFault, sleep } from "./log.js";

export type DbFaultKind = "sigkill" | "sigstop";

export interface DbFault {
  fault: DbFaultKind;
  /** Member (from 1) that was primary and got the fault. */
  member: number;
  /** Member that was primary next, and how long after the fault it was first seen (null: none seen in 60 s). */
  next_primary: number | null;
  seconds_to_next_primary: number | null;
}

export interface DbFaults {
  readonly faults: readonly DbFault[];
  /** Ends the faults (after the one under way) and waits until the set is whole again. */
  stop(): Promise<void>;
}

/**
 * Every `minGapMs` to `maxGapMs`, once every member is primary or secondary again, the primary gets the next
 * fault: SIGKILL and SIGSTOP alternately, beginning with `first`. A frozen primary stays frozen `freezeMs`.
 */
export function startDbFaults(set: RunningReplicaSet, options: { minGapMs: number; maxGapMs: number; freezeMs: number; first?: DbFaultKind }): DbFaults {
  const faults: DbFault[] = [];
  let running = true;
  let next: DbFaultKind = options.first ?? "sigkill";
  const nextPrimary = async (old: ReplicaSetMember, since: number): Promise<Pick<DbFault, "next_primary" | "seconds_to_next_primary">> => {
    while (Date.now() - since < 60_000) {
      const primary = await set.primary();
      if (primary && primary !== old) return { next_primary: primary.index + 1, seconds_to_next_primary: Math.round((Date.now() - since) / 100) / 10 };
      await sleep(100);
    }
    return { next_primary: null, seconds_to_next_primary: null };
  };
  const loop = (async () => {
    while (running) {
      await sleep(options.minGapMs + Math.random() * (options.maxGapMs - options.minGapMs));
      if (!running) break;
      await set.waitHealthy(180_000).catch((error: unknown) => log(`database: ${(error as Error).message}`));
      const primary = await set.primary(30_000);
      if (!primary || !running) continue;
      const fault = next;
      next = fault === "sigkill" ? "sigstop" : "sigkill";
      const at = Date.now();
      if (fault === "sigkill") {
        log(`database: SIGKILL of the primary, member ${primary.index + 1} (${primary.host})`);
        primary.signal("SIGKILL");
        noteFault("primary", "SIGKILL of the primary");
        const seen = await nextPrimary(primary, at);
        faults.push({ fault, member: primary.index + 1, ...seen });
        log(
          `database: member ${seen.next_primary ?? "none"} primary after ${seen.seconds_to_next_primary ?? "-"} s; the killed one is started again on ` +
            `its files`,
        );
      } else {
        log(`database: SIGSTOP of the primary, member ${primary.index + 1} (${primary.host}), for ${options.freezeMs / 1000} s`);
        primary.signal("SIGSTOP");
        noteFault("primary", "SIGSTOP of the primary");
        const seen = await nextPrimary(primary, at);
        await sleep(Math.max(0, options.freezeMs - (Date.now() - at)));
        primary.signal("SIGCONT");
        faults.push({ fault, member: primary.index + 1, ...seen });
        log(
          `database: member ${seen.next_primary ?? "none"} primary after ${seen.seconds_to_next_primary ?? "-"} s; member ${primary.index + 1} resumed ` +
            `(SIGCONT) as a stale primary`,
        );
      }
    }
  })();
  return {
    faults,
    async stop() {
      running = false;
      await loop;
      await set.waitHealthy(180_000);
    },
  };
}

export interface ElectionWatch {
  /** Distinct primaries seen (by `hello`'s electionId), less the one seen first: the elections won while watching. */
  elections(): number;
  /** How many times the set's term went up (every election held, won or not), from `replSetGetStatus`. */
  terms(): Promise<number>;
  stop(): Promise<void>;
}

/** Asks every member `hello` every 250 ms (1 s timeout: a frozen member does not answer) and keeps each primary's electionId. */
export function watchElections(set: RunningReplicaSet): ElectionWatch {
  const electionIds = new Set<string>();
  let watching = true;
  const termNow = async (): Promise<number | undefined> => {
    for (const m of set.members) {
      const hello = await m.hello();
      if (hello?.["isWritablePrimary"] && hello["electionId"]) return Number.parseInt(String(hello["electionId"]).slice(8), 16);
    }
    return undefined;
  };
  const firstTerm = termNow();
  const loop = (async () => {
    while (watching) {
      const hellos = await Promise.all(set.members.map((m) => (m.running() ? m.hello() : undefined)));
      for (const hello of hellos) if (hello?.["isWritablePrimary"] && hello["electionId"]) electionIds.add(String(hello["electionId"]));
      await sleep(250);
    }
  })();
  return {
    elections: () => Math.max(0, electionIds.size - 1),
    async terms() {
      const [first, now] = [await firstTerm, await termNow()];
      return first !== undefined && now !== undefined ? now - first : 0;
    },
    async stop() {
      watching = false;
      await loop;
    },
  };
}
