// The partitions of `npm run chaos -- --cluster` (partitions.ts) on a bare three-member replica set, through
// partition-probe.js as a process: the primary cut off from the other members loses the set to a newly elected
// member, a write it took meanwhile is never acknowledged by a majority and is rolled back after the heal; a
// `local` read showed that write, a `majority` read did not (the read-concern decision, docs/database.md); and a
// process cut off from every member fails to reach the set until the heal. The host's packet filter and cgroups
// are as they were.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const probe = new URL("../../dist/chaos/partition-probe.js", import.meta.url).pathname;
const onPath = (command: string) => ["/usr/sbin", "/usr/bin", "/sbin", "/bin"].some((dir) => existsSync(`${dir}/${command}`));
/** The run makes a network namespace and cgroups: root on Linux with unshare and ip (iptables it installs itself when it can). */
const possible = process.platform === "linux" && process.getuid?.() === 0 && onPath("unshare") && onPath("ip");
const cgroup2 = () =>
  readFileSync("/proc/mounts", "utf8")
    .split("\n")
    .find((l) => l.split(" ")[2] === "cgroup2")
    ?.split(" ")[1];
const hostRules = () => (onPath("iptables") ? ["filter", "mangle"].map((table) => execFileSync("iptables", ["-w", "-t", table, "-S"]).toString()) : []);

describe.skipIf(!possible)("partitions (needs root, unshare and ip: a network namespace and cgroups of the run's own)", () => {
  it("cut the primary off from the other members: another is elected, the old one's unacknowledged write is read by `local` only, and rolled back; cut " +
    "a process off from the database: it reaches no member until the heal", {
    timeout: 300_000,
  }, async () => {
    const before = hostRules();
    const child = spawn(process.execPath, [probe], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(0);
    const result = JSON.parse(out.trim().split("\n").at(-1)!) as Record<string, unknown>;
    expect(result).toMatchObject({
      during: expect.stringMatching(/^not acknowledged/),
      reads_on_old_primary: { local: true, majority: false },
      old_still_primary_after_election: false,
      rolled_back_on_old_primary: true,
      after_heal: { before: true, during: false },
      // The other kind: a process (as a core or a gateway would be) cut off from every member, then healed.
      client: { pings_while_cut: { ok: 0, fail: expect.any(Number) } },
    });
    const client = result.client as Record<string, { ok: number; fail: number }>;
    expect(client.pings_before!.ok).toBeGreaterThan(0);
    expect(client.pings_while_cut!.fail).toBeGreaterThan(0);
    expect(client.pings_after_heal!.ok).toBeGreaterThan(0);
    expect(result.next_primary).not.toBe(result.old_primary);
    expect(result.next_primary).not.toBeNull();
    // Nothing of the run is left on the host: its rules were in its own namespace, its cgroups are removed.
    const after = hostRules();
    expect(after.join("")).not.toMatch(/RMS_CHAOS|CONNMARK/);
    if (before.length > 0) expect(after).toEqual(before);
    expect(existsSync(`${cgroup2()}/rms-chaos-${child.pid}`)).toBe(false);
  });
});
