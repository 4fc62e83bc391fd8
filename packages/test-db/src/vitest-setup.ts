// A vitest globalSetup: one database server for a package's whole test run;
// each test file then uses its own database on it (testDatabaseName).
//   vitest.config.ts: test: { globalSetup: ["@rms/test-db/vitest-setup"] }
//   test file:        import type {} from "@rms/test-db/vitest-setup"; inject("mongoUri")
import type { TestProject } from "vitest/node";
import { describeDatabase, startDatabase, type Engine } from "./start.js";
import type { MongoJavaServerStorage } from "./mongo-java-server.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection string of the shared test database server (no database name in it). */
    mongoUri: string;
    /** Which engine serves it, for tests that document an engine's deviations. */
    mongoEngine: Engine;
    /** mongo-java-server's storage ("h2" or "memory"); null for the other engines. */
    mongoStorage: MongoJavaServerStorage | null;
  }
}

export async function setup(project: TestProject): Promise<() => Promise<void>> {
  const say = (line: string): boolean => process.stderr.write(`test-db: ${line}\n`);
  const database = await startDatabase({ logger: say });
  say(`database: ${describeDatabase(database)}`);
  project.provide("mongoUri", database.uri);
  project.provide("mongoEngine", database.engine);
  project.provide("mongoStorage", database.storage ?? null);
  return () => database.stop();
}

export default setup;
