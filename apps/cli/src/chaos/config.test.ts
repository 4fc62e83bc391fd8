import { ConfigError } from "@rms/config";
import { describe, expect, it } from "vitest";
import { deploymentOf, parseChaosConfig } from "./config.js";

describe("chaos configuration", () => {
  it("defaults every variable, empty values counting as unset", () => {
    const expected = {
      requests: 1000,
      workers: 2,
      jobItems: 10_000,
      noisyItems: 2_000,
      noisyCreates: 300,
      fileRows: 200_000,
      clusterLoadSeconds: 1200,
      readers: 4,
      historyFile: undefined,
      partitions: true,
      weaken: false,
      noisy: true,
      cluster: false,
    };
    expect(parseChaosConfig({}, [])).toEqual(expected);
    expect(parseChaosConfig({ CHAOS_REQUESTS: "", CHAOS_NOISY: "" }, [])).toEqual(expected);
  });

  it("reads each variable, and --cluster (which never runs the noisy phase)", () => {
    expect(
      parseChaosConfig(
        { CHAOS_REQUESTS: "0", CHAOS_WORKERS: "3", CHAOS_JOB_ITEMS: "200", CHAOS_NOISY_ITEMS: "50", CHAOS_NOISY_CREATES: "7", CHAOS_NOISY: "0" },
        [],
      ),
    ).toEqual({
      requests: 0,
      workers: 3,
      jobItems: 200,
      noisyItems: 50,
      noisyCreates: 7,
      fileRows: 200_000,
      clusterLoadSeconds: 1200,
      readers: 4,
      historyFile: undefined,
      partitions: true,
      weaken: false,
      noisy: false,
      cluster: false,
    });
    expect(parseChaosConfig({}, ["--cluster"])).toMatchObject({ cluster: true, noisy: false });
    expect(
      parseChaosConfig({ CHAOS_FILE_ROWS: "0", CHAOS_CLUSTER_LOAD_SECONDS: "60", CHAOS_READERS: "0", CHAOS_HISTORY: "h.jsonl", CHAOS_PARTITIONS: "0" }, [
        "--cluster",
        "--weaken",
      ]),
    ).toMatchObject({ fileRows: 0, clusterLoadSeconds: 60, readers: 0, historyFile: "h.jsonl", partitions: false, weaken: true });
  });

  it.each([
    [{ CHAOS_REQUESTS: "many" }, "CHAOS_REQUESTS must be a whole number from 0 to 1000000"],
    [{ CHAOS_WORKERS: "0" }, "CHAOS_WORKERS must be a whole number from 1 to 64"],
    [{ CHAOS_JOB_ITEMS: "20000" }, "CHAOS_JOB_ITEMS must be a whole number from 1 to 10000"],
    [{ CHAOS_NOISY_ITEMS: "-1" }, "CHAOS_NOISY_ITEMS must be a whole number from 1 to 10000"],
    [{ CHAOS_NOISY: "no" }, "CHAOS_NOISY must be 0 or 1"],
  ])("refuses %o in one line naming it", (env, message) => {
    expect(() => parseChaosConfig(env, [])).toThrow(new ConfigError(message));
  });

  it("--upgrade-from <commit> with --cluster, and --rollback with both", () => {
    expect(parseChaosConfig({}, ["--cluster", "--upgrade-from", "699d0a0"]).upgrade).toEqual({ from: "699d0a0", rollback: false });
    expect(parseChaosConfig({}, ["--upgrade-from", "v1.4.0", "--cluster", "--rollback"]).upgrade).toEqual({ from: "v1.4.0", rollback: true });
    expect(parseChaosConfig({}, ["--cluster"]).upgrade).toBeUndefined();
    expect(() => parseChaosConfig({}, ["--upgrade-from", "699d0a0"])).toThrow(/add --cluster/);
    expect(() => parseChaosConfig({}, ["--cluster", "--rollback"])).toThrow(/add --upgrade-from/);
    expect(() => parseChaosConfig({}, ["--cluster", "--upgrade-from"])).toThrow(/needs a commit/);
    expect(() => parseChaosConfig({}, ["--cluster", "--upgrade-from", "--rollback"])).toThrow(/needs a commit/);
  });

  it("refuses an unknown argument", () => {
    expect(() => parseChaosConfig({}, ["--clutser"])).toThrow(/unknown argument "--clutser"/);
  });

  it("is the only reader of the environment in the chaos driver's entry point", async () => {
    const { readFileSync } = await import("node:fs");
    const main = readFileSync(new URL("./main.ts", import.meta.url), "utf8");
    expect(main.match(/process\.env\.\w+/g) ?? []).toEqual([]);
    expect(main).toContain("parseChaosConfig(process.env, process.argv.slice(2))");
  });

  it(
    "--weaken changes the deployment in two settings a real one could have, and nothing else: core's write concern 1 and the gateways' rate limits in " +
      "memory",
    () => {
      expect(deploymentOf(false)).toEqual({ coreFaults: "resource.create:0.02", rateLimitStore: "mongodb" });
      expect(deploymentOf(true)).toEqual({ coreFaults: "resource.create:0.02,writes.w1:1", rateLimitStore: "memory" });
    },
  );
});
