// The network partitions of `npm run chaos -- --cluster` (docs/scaling.md, "Partitions"). The run moves itself
// into a network namespace of its own (`unshare --net`, as root), so that every address, port and packet filter
// it uses is its own and goes away with it, whatever ends it; the host's network and firewall are never touched.
// Inside, every process of the cluster is placed in a cgroup of its own (`rms-chaos-<pid>/<name>`, made and
// removed by the run), and iptables (installed from the system's packages when missing, like HAProxy) marks each
// TCP connection a process opens to a database member with the pair (process, member). A partition is a set of
// such pairs whose connections, both directions, are dropped; healing removes the drop rules.
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import type { RunningReplicaSet } from "@rms/test-db";
import type { Cluster } from "../cluster/cluster.js";
import { findOrInstallHaproxy } from "../cluster/haproxy.js";
import { log, noteFault, sleep } from "./log.js";

const run = promisify(execFile);
/** Set in the run's own namespace: the cgroup directory the outer process removes once the run ends. */
const INSIDE = "RMS_CHAOS_NETNS_CGROUP";

function onPath(command: string): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(delimiter), "/usr/sbin", "/usr/local/sbin", "/sbin", "/usr/bin", "/bin"];
  return dirs.map((dir) => join(dir, command)).find((path) => path.startsWith("/") && existsSync(path));
}

/** iptables: on PATH, else installed with apt-get as root (one line saying so), else undefined with one line saying why. */
async function findOrInstallIptables(say: (line: string) => void): Promise<string | undefined> {
  const found = onPath("iptables");
  if (found) return found;
  const apt = onPath("apt-get");
  const how = "install iptables from the system's packages (Debian, Ubuntu: sudo apt-get install iptables)";
  if (!apt || process.getuid?.() !== 0) {
    say(`partitions: iptables is not installed and cannot be installed here (${how}); the run goes on without partitions`);
    return undefined;
  }
  say("partitions: iptables is not installed: installing it from the system's packages (apt-get install -y iptables, as root)");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () =>
    run(apt, ["install", "-y", "--no-install-recommends", "iptables"], { env }).then(
      () => true,
      () => false,
    );
  if (!(await install())) await run(apt, ["update"], { env }).then(install, () => false);
  const installed = onPath("iptables");
  if (!installed) say(`partitions: iptables could not be installed (${how}); the run goes on without partitions`);
  return installed;
}

/** The cgroup v2 hierarchy's mount point, if there is one. */
function cgroup2Root(): string | undefined {
  const line = readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .find((l) => l.split(" ")[2] === "cgroup2");
  return line?.split(" ")[1];
}

/** Removes a run's cgroups (the processes in them must have exited), trying for up to `waitMs`. */
async function removeCgroups(dir: string, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      if (existsSync(dir)) {
        for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) rmdirSync(join(dir, entry.name));
        rmdirSync(dir);
      }
      return true;
    } catch {
      if (Date.now() > deadline) return false;
      await sleep(250);
    }
  }
}

/**
 * With partitions wanted, runs this same command again in a new network namespace (loopback only, brought up)
 * and exits with its code once it ends, after removing its cgroups; never returns then. Returns true when this
 * process is that run (partitions possible), false when partitions cannot be had here (one line said why).
 */
export async function enterOwnNetwork(wanted: boolean): Promise<boolean> {
  if (!wanted) return false;
  if (process.env[INSIDE]) return true;
  const unshare = onPath("unshare");
  const ip = onPath("ip");
  const root = cgroup2Root();
  if (process.platform !== "linux" || process.getuid?.() !== 0 || !unshare || !ip || !root) {
    log(
      "partitions: need Linux, root, unshare, ip and a cgroup v2 hierarchy (the run's own network namespace and cgroups); the run goes on without partitions",
    );
    return false;
  }
  if (!(await findOrInstallIptables(log))) return false;
  // A run killed outright leaves its (empty) cgroups: those of launchers that have exited go now.
  for (const entry of readdirSync(root).filter((name) => /^rms-chaos-\d+$/.test(name))) {
    if (!existsSync(`/proc/${entry.slice("rms-chaos-".length)}`)) await removeCgroups(join(root, entry), 0);
  }
  // What would be installed from the network inside, installed now: HAProxy.
  await findOrInstallHaproxy(process.env, "/dev/null", log);
  const cgroupDir = join(root, `rms-chaos-${process.pid}`);
  const child = spawn(
    unshare,
    ["--net", "--", "sh", "-c", `${ip} link set lo up && exec "$0" "$@"`, process.execPath, ...process.execArgv, ...process.argv.slice(1)],
    {
      stdio: "inherit",
      env: { ...process.env, [INSIDE]: cgroupDir },
    },
  );
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => child.kill(signal));
  const code = await new Promise<number>((resolve) => child.once("exit", (c, s) => resolve(c ?? (s ? 1 : 0))));
  if (!(await removeCgroups(cgroupDir, 30_000))) log(`partitions: could not remove the cgroups in ${cgroupDir}`);
  process.exit(code);
}

export type PartitionKind = "primary-from-members" | "core-from-database" | "gateway-from-database";

export interface Partition {
  kind: PartitionKind;
  /** The process cut off (for the first kind: the primary, member n). */
  target: string;
  /** When it was cut, seconds since the partitions began, and for how long. */
  at_s: number;
  held_s: number;
  /** The member that was primary next (another than the cut one), and after how long; null: none seen while held. */
  next_primary: number | null;
  seconds_to_next_primary: number | null;
}

export interface Partitions {
  readonly partitions: readonly Partition[];
  /** Ends the partitions (healing the one under way). */
  stop(): Promise<void>;
}

/**
 * The run's own cgroups and packet marks, set up before the cluster starts (so every socket is made in its process's
 * cgroup, and every connection is tracked from its first packet).
 */
export interface Network {
  /** Places a process in its cgroup: called as it is spawned, before it opens any socket. */
  place(name: string, pid: number): void;
  /** Marks each connection a process (a member, or one of `others`) opens to a member with the pair; then cuts and heals. */
  cutter(set: RunningReplicaSet, others: readonly string[]): Promise<Cutter>;
  /** Removes the rules and the cgroups (once the processes in them have exited). */
  close(): Promise<void>;
}

/** Partitions between the marked processes and the members. */
export interface Cutter {
  /** Drops every connection, both ways, between the primary `member` (index from 0) and the other members. */
  isolateMember(member: number): Promise<void>;
  /** Drops every connection, both ways, between a process and every member. */
  isolateFromDatabase(name: string): Promise<void>;
  /** Removes every drop rule. */
  heal(): Promise<void>;
}

const iptables = (...args: string[]) => run("iptables", ["-w", ...args]);

/** In the run's own namespace (enterOwnNetwork returned true): the cgroups' directory, and connection tracking on from now. */
export async function prepareNetwork(): Promise<Network> {
  const cgroupDir = process.env[INSIDE]!;
  const cgroupPath = cgroupDir.slice(cgroup2Root()!.length + 1);
  mkdirSync(cgroupDir, { recursive: true });
  // Any rule that uses connection tracking turns it on in this namespace: every connection from its first packet.
  await iptables(..."-t mangle -A OUTPUT -m conntrack --ctstate INVALID -j RETURN".split(" "));
  await iptables("-N", "RMS_CHAOS");
  await iptables("-A", "OUTPUT", "-j", "RMS_CHAOS");
  const place = (name: string, pid: number) => {
    try {
      mkdirSync(join(cgroupDir, name), { recursive: true });
      writeFileSync(join(cgroupDir, name, "cgroup.procs"), String(pid));
    } catch (error) {
      log(`partitions: ${name} (pid ${pid}) not placed in its cgroup: ${(error as Error).message}`);
    }
  };
  const heal = () => iptables("-F", "RMS_CHAOS").then(() => undefined);
  return {
    place,
    async cutter(set, others) {
      const parties = [...set.members.map((m) => `member${m.index + 1}`), ...others];
      const mark = (party: string, member: number) => (parties.indexOf(party) + 1) * 8 + member + 1;
      // Marked on every packet of the connection's opening side, so a connection made before these rules is
      // marked by its next packet (members exchange heartbeats every 2 s).
      for (const party of parties) {
        for (const member of set.members) {
          if (party === `member${member.index + 1}`) continue;
          await iptables(
            ..."-t mangle -A OUTPUT -p tcp -m conntrack --ctdir ORIGINAL".split(" "),
            ...[
              "-m",
              "cgroup",
              "--path",
              `${cgroupPath}/${party}`,
              "--dport",
              String(member.port),
              "-j",
              "CONNMARK",
              "--set-mark",
              String(mark(party, member.index)),
            ],
          );
        }
      }
      const drop = async (pairs: [string, number][]) => {
        for (const [party, member] of pairs) await iptables("-A", "RMS_CHAOS", "-m", "connmark", "--mark", String(mark(party, member)), "-j", "DROP");
      };
      return {
        isolateMember: (member) =>
          drop(
            set.members
              .filter((m) => m.index !== member)
              .flatMap((m): [string, number][] => [
                [`member${member + 1}`, m.index],
                [`member${m.index + 1}`, member],
              ]),
          ),
        isolateFromDatabase: (name) => drop(set.members.map((m): [string, number] => [name, m.index])),
        heal,
      };
    },
    async close() {
      await heal().catch(() => undefined);
      await iptables("-t", "mangle", "-F", "OUTPUT").catch(() => undefined);
      await iptables("-D", "OUTPUT", "-j", "RMS_CHAOS").catch(() => undefined);
      await iptables("-X", "RMS_CHAOS").catch(() => undefined);
      if (!(await removeCgroups(cgroupDir, 20_000))) log(`partitions: the cgroups in ${cgroupDir} are removed when the run ends`);
    },
  };
}

/**
 * Every `minGapMs` to `maxGapMs` once the set is whole, one partition for `holdMs`, in turn: the primary from the
 * other members, a core from the database, the primary again, a gateway from the database (cores and gateways 1
 * and 2 alternately).
 */
export async function startPartitions(
  network: Network,
  set: RunningReplicaSet,
  cluster: Cluster,
  options: { minGapMs: number; maxGapMs: number; holdMs: number },
): Promise<Partitions> {
  const cutter = await network.cutter(
    set,
    cluster.names.filter((n) => n !== "haproxy"),
  );
  const partitions: Partition[] = [];
  const began = Date.now();
  let running = true;
  const kinds: PartitionKind[] = ["primary-from-members", "core-from-database", "primary-from-members", "gateway-from-database"];
  const loop = (async () => {
    for (let n = 0; running; n++) {
      await sleep(options.minGapMs + Math.random() * (options.maxGapMs - options.minGapMs));
      if (!running) break;
      await set.waitHealthy(180_000).catch((error: unknown) => log(`partitions: ${(error as Error).message}`));
      const primary = await set.primary(30_000);
      if (!primary || !running) continue;
      const kind = kinds[n % kinds.length]!;
      const which = 1 + (Math.floor(n / kinds.length) % 2);
      const target = kind === "primary-from-members" ? `member${primary.index + 1}` : kind === "core-from-database" ? `core${which}` : `gateway${which}`;
      const at = Date.now();
      log(
        `partitions: ${kind}: ${target} cut off${kind === "primary-from-members" ? " from the other members" : " from every member"} for ` +
          `${options.holdMs / 1000} s`,
      );
      noteFault(kind === "primary-from-members" ? "primary" : kind === "core-from-database" ? "core" : "gateway", `partition ${kind}`);
      await (kind === "primary-from-members" ? cutter.isolateMember(primary.index) : cutter.isolateFromDatabase(target));
      let next: { next_primary: number | null; seconds_to_next_primary: number | null } = { next_primary: null, seconds_to_next_primary: null };
      while (Date.now() - at < options.holdMs) {
        const now = await set.primary();
        if (next.next_primary === null && now && now !== primary)
          next = { next_primary: now.index + 1, seconds_to_next_primary: Math.round((Date.now() - at) / 100) / 10 };
        await sleep(200);
      }
      await cutter.heal();
      const held = Math.round((Date.now() - at) / 100) / 10;
      partitions.push({ kind, target, at_s: Math.round((at - began) / 100) / 10, held_s: held, ...next });
      log(
        `partitions: healed after ${held} ` +
          `s${kind === "primary-from-members" ? `; member ${next.next_primary ?? "none"} was elected after ${next.seconds_to_next_primary ?? "-"} s` : ""}`,
      );
    }
  })();
  return {
    partitions,
    async stop() {
      running = false;
      await loop;
      await cutter.heal();
    },
  };
}
