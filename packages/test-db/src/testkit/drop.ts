import { MongoClient } from "mongodb";

/** Drops one test database at teardown, so test runs leave no databases behind on a shared server. */
export async function dropDatabase(mongoUri: string, databaseName: string): Promise<void> {
  const client = new MongoClient(mongoUri, { serverSelectionTimeoutMS: 5_000 });
  try {
    await client.db(databaseName).dropDatabase();
  } finally {
    await client.close();
  }
}
