import { ConfigError, parseEnvironment } from "@rms/config";
import { z } from "zod";

/** A whole number from `min` to `max`, as its decimal text; `fallback` when unset. */
const wholeNumber = (min: number, max: number, fallback: number) =>
  z
    .string()
    .trim()
    .regex(/^\d{1,9}$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .refine((n) => n >= min && n <= max, `must be a whole number from ${min} to ${max}`)
    .default(fallback);

/**
 * The variables `npm run chaos` reads, checked once at start by a schema like every other entry point's
 * (a wrong value stops it with one line naming the variable, exit 2): docs/jobs.md and docs/webhooks.md, "chaos".
 */
const schema = z.object({
  /** Creates of the resources phase; 0 skips it. */
  CHAOS_REQUESTS: wholeNumber(0, 1_000_000, 1000),
  /** Worker processes, each SIGKILLed at random like core and gateway. */
  CHAOS_WORKERS: wholeNumber(1, 64, 2),
  /** The jobs phase's import size (an import takes at most 10,000 items). */
  CHAOS_JOB_ITEMS: wholeNumber(1, 10_000, 10_000),
  /** The noisy-neighbour phase: the import fanned out to the 16 dead endpoints, and the other account's creates. */
  CHAOS_NOISY_ITEMS: wholeNumber(1, 10_000, 2_000),
  CHAOS_NOISY_CREATES: wholeNumber(1, 100_000, 300),
  /** `0` skips the noisy-neighbour phase. */
  CHAOS_NOISY: z.enum(["0", "1"], "must be 0 or 1").default("1"),
  /** The files phase's rows: an import from a file and an export of what it made; 0 skips the phase. */
  CHAOS_FILE_ROWS: wholeNumber(0, 10_000_000, 200_000),
  /** With `--cluster`: seconds the load may take, from its start (each fault stops writes for seconds). */
  CHAOS_CLUSTER_LOAD_SECONDS: wholeNumber(1, 86_400, 20 * 60),
  /** With `--cluster`: readers recording reads, searches and list walks beside the load (history.ts). */
  CHAOS_READERS: wholeNumber(0, 64, 4),
  /** With `--cluster`: where the history goes (JSONL); unset: `chaos-history-<time>.jsonl` in the working directory. */
  CHAOS_HISTORY: z.string().min(1).optional(),
  /** With `--cluster`: `0` injects no partitions. */
  CHAOS_PARTITIONS: z.enum(["0", "1"], "must be 0 or 1").default("1"),
});

export interface ChaosConfig {
  readonly requests: number;
  readonly workers: number;
  readonly jobItems: number;
  readonly noisyItems: number;
  readonly noisyCreates: number;
  readonly fileRows: number;
  readonly clusterLoadSeconds: number;
  readonly readers: number;
  readonly historyFile: string | undefined;
  readonly partitions: boolean;
  /** `--weaken`: core writes with write concern 1 and the gateways keep their rate limits in memory, so the checker must find anomalies. */
  readonly weaken: boolean;
  /** The noisy-neighbour phase runs (never with `--cluster`). */
  readonly noisy: boolean;
  /** `--cluster`: against the cluster of `npm run cluster`, with the replica set's primary killed and frozen too. */
  readonly cluster: boolean;
  /**
   * `--upgrade-from <commit>` (with `--cluster`): the cluster starts on that commit's build and each process is replaced
   * by this build while the load runs (upgrade.ts); `--rollback` then replaces each one by that build again.
   */
  readonly upgrade?: { readonly from: string; readonly rollback: boolean };
}

/** The arguments the run takes; `--upgrade-from` takes a value. */
const FLAGS = ["--cluster", "--weaken", "--rollback"];

/** The chaos run's configuration from its environment and arguments; throws ConfigError on a bad value or an unknown argument. */
export function parseChaosConfig(env: Readonly<Record<string, string | undefined>>, args: readonly string[]): ChaosConfig {
  const at = args.indexOf("--upgrade-from");
  const from = at >= 0 ? args[at + 1] : undefined;
  if (at >= 0 && (from === undefined || from.startsWith("--"))) throw new ConfigError("--upgrade-from needs a commit (a release's commit, a tag or a branch)");
  const unknown = args.find((arg, i) => !FLAGS.includes(arg) && !(at >= 0 && (i === at || i === at + 1)));
  if (unknown !== undefined)
    throw new ConfigError(`unknown argument ${JSON.stringify(unknown)}: the only ones are --cluster, --weaken, --upgrade-from <commit> and --rollback`);
  const c = parseEnvironment(schema, env);
  const cluster = args.includes("--cluster");
  const rollback = args.includes("--rollback");
  if ((from !== undefined || rollback) && !cluster) throw new ConfigError("--upgrade-from and --rollback run against the cluster: add --cluster");
  if (rollback && from === undefined) throw new ConfigError("--rollback rolls an upgrade back: add --upgrade-from <commit>");
  return {
    requests: c.CHAOS_REQUESTS,
    workers: c.CHAOS_WORKERS,
    jobItems: c.CHAOS_JOB_ITEMS,
    noisyItems: c.CHAOS_NOISY_ITEMS,
    noisyCreates: c.CHAOS_NOISY_CREATES,
    fileRows: c.CHAOS_FILE_ROWS,
    clusterLoadSeconds: c.CHAOS_CLUSTER_LOAD_SECONDS,
    readers: c.CHAOS_READERS,
    historyFile: c.CHAOS_HISTORY,
    partitions: c.CHAOS_PARTITIONS === "1",
    weaken: args.includes("--weaken"),
    noisy: c.CHAOS_NOISY === "1" && !cluster,
    cluster,
    ...(from !== undefined ? { upgrade: { from, rollback } } : {}),
  };
}

/** Core also kills itself after 2% of create writes (RMS_FAULTS), in either build. */
const CRASH_AFTER_WRITE = "resource.create:0.02";

/** What the run's deployment is made of where the weakened build differs: core's RMS_FAULTS and the cluster gateways' rate-limit store. */
export interface Deployment {
  readonly coreFaults: string;
  readonly rateLimitStore: "mongodb" | "memory";
}

/**
 * The normal build, or `--weaken`'s: a deployment that could exist and is wrong (docs/scaling.md, "The checker can
 * fail"): core writes with write concern 1 (`writes.w1`, its idempotency records too), and each gateway keeps its
 * rate limits in memory, so no majority write of the gateway's comes before core's and holds requests back while
 * the primary is cut off.
 */
export function deploymentOf(weaken: boolean): Deployment {
  return weaken ? { coreFaults: `${CRASH_AFTER_WRITE},writes.w1:1`, rateLimitStore: "memory" } : { coreFaults: CRASH_AFTER_WRITE, rateLimitStore: "mongodb" };
}
