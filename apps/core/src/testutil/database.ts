import { testDatabaseName } from "@rms/test-db";
import type {} from "@rms/test-db/vitest-setup";
import { MongoClient, type Db } from "mongodb";
import { afterAll, beforeAll, inject } from "vitest";

/** What `useTestDatabase` hands a test file: usable at once (the client connects before the file's tests). */
export interface TestDatabase {
  readonly client: MongoClient;
  readonly db: Db;
  readonly databaseName: string;
}

/**
 * For a test file: a database of its own on the test server (named from `prefix`), connected before the file's
 * tests, then `prepare`d (indexes, a fixture), dropped and closed after them (after the file's own afterAll hooks).
 */
export function useTestDatabase(prefix: string, prepare?: (db: Db) => Promise<unknown>): TestDatabase {
  const client = new MongoClient(inject("mongoUri"));
  const databaseName = testDatabaseName(prefix);
  const db = client.db(databaseName);
  beforeAll(async () => {
    await client.connect();
    await prepare?.(db);
  });
  afterAll(async () => {
    await db.dropDatabase();
    await client.close();
  });
  return { client, db, databaseName };
}
