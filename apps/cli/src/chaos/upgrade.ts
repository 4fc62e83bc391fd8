// The rolling upgrade of `npm run chaos -- --cluster --upgrade-from <commit> [--rollback]` (docs/migrations.md,
// "Rolling upgrade and rollback"): the cluster started on the build of an earlier release (releases/build.ts), and
// while the load runs each process is replaced by this build, one at a time, in the documented order (cores, then
// workers, then gateways), each waited for until it serves before the next. With `--rollback`, once every process
// runs this build and `rms migrate status` allows it (only expand steps have run), each is replaced by the earlier
// build again, in the reverse order. The run's own SIGKILLs and database faults go on throughout.
import { RELEASE } from "@rms/config";
import { FIRST_RELEASE, MIGRATIONS_COLLECTION, migrationStatus } from "@rms/core";
import { MongoClient } from "mongodb";
import type { Cluster, ClusterProcess } from "../cluster/cluster.js";
import { statusOk } from "../stack/start.js";
import { adminClient } from "../stack/processes.js";
import type { ReleaseBuild } from "../releases/build.js";
import { PROCESS_KINDS, entryPoint, type ProcessKind } from "../stack/entry-points.js";
import { log, sleep } from "./log.js";

/** The order of docs/migrations.md: cores first (the first one runs the steps), then workers, then gateways. */
export const UPGRADE_ORDER: readonly ClusterProcess[] = ["core1", "core2", "worker1", "worker2", "gateway1", "gateway2"];
/** How long a replaced process may take to serve (its start, a core's migrations, restarts after the run's own kills). */
const READY_TIMEOUT_MS = 180_000;
/** Between two replacements: the load runs on the mixed cluster for a while. */
const PAUSE_MS = 5_000;
/** A worker serves nothing: it counts as started once it has run this long. */
const WORKER_SETTLE_MS = 3_000;

const kindOf = (name: ClusterProcess): ProcessKind => (name.startsWith("core") ? "core" : name.startsWith("gateway") ? "gateway" : "worker");

export interface Replacement {
  process: ClusterProcess;
  from: string;
  to: string;
  /** Seconds since the upgrade began. */
  at_s: number;
  /** From the old process's stop to the new one serving. */
  ready_after_ms: number;
}

export interface UpgradeReport {
  from: { commit: string; release: string };
  to: string;
  mode: "upgrade" | "upgrade-then-rollback";
  order: readonly ClusterProcess[];
  replacements: Replacement[];
  /** The steps recorded once every process ran this build, and the rollback floor then (`rms migrate status`). */
  migrations: { id: string; kind: string; state: string; finished_by_release?: string }[];
  rollback_floor: string | null;
  /** Why the run failed to replace a process, or refused the rollback; null when all went through. */
  error: string | null;
  seconds: number;
}

export interface RollingUpgrade {
  /** True until every replacement is done (or failed). */
  running(): boolean;
  /** Resolves with the report once every replacement is done. */
  readonly done: Promise<UpgradeReport>;
}

/** This build's scripts, by process kind. */
export function currentScripts(): Record<ProcessKind, string> {
  return Object.fromEntries(PROCESS_KINDS.map((kind) => [kind, entryPoint(kind)])) as Record<ProcessKind, string>;
}

/** The earlier build's scripts, by process kind: where the cluster starts. */
export function scriptsOf(build: ReleaseBuild): Record<ProcessKind, string> {
  return Object.fromEntries(PROCESS_KINDS.map((kind) => [kind, build.entryPoint(kind)])) as Record<ProcessKind, string>;
}

/** Waits until the process serves: a core answers an admin call, a gateway `GET /v1/status`, a worker runs for a while. */
async function ready(cluster: Cluster, name: ClusterProcess): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const n = Number(name.replace(/\D/g, ""));
  for (let since: number | undefined; Date.now() < deadline; await sleep(200)) {
    const kind = kindOf(name);
    if (kind === "core") {
      const admin = adminClient(cluster.coreAddrs[n - 1]!);
      const answered = await admin
        .listAccounts({ limit: 1 })
        .then(() => true)
        .catch(() => false)
        .finally(() => admin.close());
      if (answered) return;
    } else if (kind === "gateway") {
      if (await statusOk(cluster.gateways[n - 1]!.port)) return;
    } else {
      const child = cluster.running(name);
      since = child ? (since ?? Date.now()) : undefined;
      if (since !== undefined && Date.now() - since >= WORKER_SETTLE_MS) return;
    }
  }
  throw new Error(`${name} did not serve within ${READY_TIMEOUT_MS / 1000} s of its replacement`);
}

/**
 * Starts the replacements `startAfterMs` from now, while the run goes on. `from` is the earlier build the cluster was
 * started on; the database is read (never written) for the migrations' records.
 */
export function startRollingUpgrade(
  cluster: Cluster,
  options: { from: ReleaseBuild; rollback: boolean; databaseUri: string; databaseName: string; startAfterMs: number },
): RollingUpgrade {
  const started = Date.now();
  const report: UpgradeReport = {
    from: { commit: options.from.commit, release: options.from.release },
    to: RELEASE,
    mode: options.rollback ? "upgrade-then-rollback" : "upgrade",
    order: UPGRADE_ORDER,
    replacements: [],
    migrations: [],
    rollback_floor: null,
    error: null,
    seconds: 0,
  };
  const releaseOf = (script: string) => (script.startsWith(options.from.dir) ? options.from.release : RELEASE);
  let running = true;

  const replace = async (name: ClusterProcess, script: string) => {
    const from = releaseOf(cluster.scriptOf(name));
    const at = Date.now();
    log(`upgrade: replacing ${name} (${from}) by ${releaseOf(script)}`);
    await cluster.replace(name, script);
    await ready(cluster, name);
    const replacement = { process: name, from, to: releaseOf(script), at_s: Math.round((at - started) / 1000), ready_after_ms: Date.now() - at };
    report.replacements.push(replacement);
    log(`upgrade: ${name} serves as ${replacement.to} after ${replacement.ready_after_ms} ms`);
    await sleep(PAUSE_MS);
  };

  const readMigrations = async () => {
    const client = await new MongoClient(options.databaseUri).connect();
    try {
      const db = client.db(options.databaseName);
      const records = await db
        .collection<{ _id: string; kind: string; state: string; finished_by_release?: string }>(MIGRATIONS_COLLECTION)
        .find({})
        .sort({ _id: 1 })
        .toArray();
      report.migrations = records.map((r) => ({
        id: r._id,
        kind: r.kind,
        state: r.state,
        ...(r.finished_by_release ? { finished_by_release: r.finished_by_release } : {}),
      }));
      report.rollback_floor = (await migrationStatus(db)).rollbackFloor;
    } finally {
      await client.close();
    }
  };

  const done = (async () => {
    try {
      await sleep(options.startAfterMs);
      const current = currentScripts();
      for (const name of UPGRADE_ORDER) await replace(name, current[kindOf(name)]);
      await readMigrations();
      if (options.rollback) {
        // `rms migrate status`'s rule: the earlier release may run again only while no contract step has begun.
        if (report.rollback_floor !== FIRST_RELEASE && report.rollback_floor !== options.from.release) {
          throw new Error(`rollback refused: the rollback floor is ${report.rollback_floor}, later than ${options.from.release}`);
        }
        const earlier = scriptsOf(options.from);
        for (const name of [...UPGRADE_ORDER].reverse()) await replace(name, earlier[kindOf(name)]);
      }
    } catch (error) {
      report.error = error instanceof Error ? error.message : String(error);
      log(`upgrade: ${report.error}`);
    } finally {
      running = false;
      report.seconds = Math.round((Date.now() - started) / 1000);
    }
    return report;
  })();
  return { running: () => running, done };
}
