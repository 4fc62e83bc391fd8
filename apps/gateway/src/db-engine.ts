import type { Db } from "mongodb";
import { usesSecondaryIndexes } from "@rms/db-engine";

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
