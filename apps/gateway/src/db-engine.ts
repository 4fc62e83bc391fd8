import type { Db } from "mongodb";

/**
 * Whether the database keeps data in non-unique indexes (the same rule as core's):
 * mongo-java-server, the embedded engine, accepts and lists them but never uses
 * them, and each declared one makes every start of it re-scan the collection. It
 * answers serverStatus with `process: "java"` (MongoDB says "mongod" or "mongos");
 * where serverStatus is not allowed (a restricted user), it is MongoDB.
 */
export async function usesSecondaryIndexes(db: Db): Promise<boolean> {
  const status = await db
    .admin()
    .command({ serverStatus: 1 })
    .catch(() => undefined);
  return status?.["process"] !== "java";
}

/** Something with non-unique indexes to declare (every gateway index is one). */
export interface Indexed {
  ensureIndexes(): Promise<void>;
}

/** Declares the stores' indexes on engines that use them; does nothing on the others. */
export async function ensureSecondaryIndexes(db: Db, stores: readonly (Indexed | undefined)[]): Promise<boolean> {
  if (!(await usesSecondaryIndexes(db))) return false;
  for (const store of stores) await store?.ensureIndexes();
  return true;
}
