import type { Db } from "mongodb";

/**
 * Whether the database keeps data in non-unique indexes. mongo-java-server (the
 * embedded engine) accepts and lists them but never uses them, and every declared
 * one makes each of its starts re-scan the collection; it is recognised by its own
 * answer to serverStatus (`process: "java"`; MongoDB says "mongod" or "mongos").
 * Where serverStatus is not allowed (a restricted MongoDB user), it is MongoDB.
 */
export async function usesSecondaryIndexes(db: Db): Promise<boolean> {
  const status = await db
    .admin()
    .command({ serverStatus: 1 })
    .catch(() => undefined);
  return status?.["process"] !== "java";
}
