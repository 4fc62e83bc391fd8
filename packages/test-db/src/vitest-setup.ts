// A vitest globalSetup: one database server for a package's whole test run;
// each test file then uses its own database on it (testDatabaseName).
//   vitest.config.ts: test: { globalSetup: ["@rms/test-db/vitest-setup"] }
//   test file:        import type {} from "@rms/test-db/vitest-setup"; inject("mongoUri")
import type { TestProject } from "vitest/node";
import { describeDatabase, startDatabase } from "./start.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection string of the shared test database server (no database name in it). */
    mongoUri: string;
    /** True when the server was started for this run (so a test may restart or kill a server of its own kind); false for MONGODB_URI. */
    mongoStartedHere: boolean;
  }
}

export async function setup(project: TestProject): Promise<() => Promise<void>> {
  const say = (line: string): boolean => process.stderr.write(`test-db: ${line}\n`);
  const database = await startDatabase({ logger: say, testCommands: true });
  say(`database: ${describeDatabase(database)}`);
  project.provide("mongoUri", database.uri);
  project.provide("mongoStartedHere", database.engine !== "external");
  return () => database.stop();
}

export default setup;
