// Test-only: the CLI run in-process against a real core of the test's own database.
import { startCore, type CoreOptions, type RunningCore } from "@rms/core";
import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { afterAll, beforeAll, inject } from "vitest";
import { runCli } from "../cli.js";

/** The admin credential of the test core (what `npm start` writes to the data directory). */
export const ADMIN_TOKEN = "cli-test-admin-token-0123456789";

/**
 * For a CLI test file: a core over a database of its own (named from `name`), started before the file's tests,
 * its database dropped and the core stopped after them.
 */
export function useCliCore(name: string, options: Pick<CoreOptions, "relay"> = {}) {
  const databaseName = testDatabaseName(name);
  let core: RunningCore | undefined;
  beforeAll(async () => {
    core = await startCore({ mongoUri: inject("mongoUri"), databaseName, adminToken: ADMIN_TOKEN, ...options });
  });
  afterAll(async () => {
    await core?.mongo.db(databaseName).dropDatabase();
    await core?.stop(1_000);
  });
  const cliCore = {
    /** The core's address (read it inside tests: the core starts before them). */
    get address(): string {
      if (!core) throw new Error("the test core is not started (read its address inside a test)");
      return core.address;
    },
    /** Runs the CLI in-process against the core, with its admin credential: exit code, output, standard output as JSON lines. */
    async rms(...args: string[]) {
      let stdout = "";
      let stderr = "";
      const code = await runCli(args, {
        env: { RMS_ADMIN_TOKEN: ADMIN_TOKEN, CORE_ADDR: cliCore.address },
        stdout: (t) => (stdout += t),
        stderr: (t) => (stderr += t),
      });
      const json = () =>
        stdout
          .trim()
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line));
      return { code, stdout, stderr, json };
    },
  };
  return cliCore;
}
