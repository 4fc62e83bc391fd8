import { randomBytes } from "node:crypto";

/** A database name of its own for one test file: [a-z0-9_], at most 63 characters. */
export function testDatabaseName(prefix = "test"): string {
  const clean = prefix
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, "_")
    .slice(0, 40);
  return `${clean}_${process.pid}_${randomBytes(5).toString("hex")}`;
}
