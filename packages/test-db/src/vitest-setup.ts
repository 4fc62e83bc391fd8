// A vitest globalSetup: one database server for a package's whole test run;
// each test file then uses its own database on it (testDatabaseName).
import type { TestProject } from "vitest/node";
import { startDatabase } from "./start.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection string of the shared test database server. */
    mongoUri: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const database = await startDatabase({ logger: (line) => process.stderr.write(`test-db: ${line}\n`) });
  project.provide("mongoUri", database.uri);
  return () => database.stop();
}
