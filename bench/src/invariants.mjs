// The bench's only reads of core's stored state, read-only, each for what no API shows. The collection read is
// named here (core exports no collection names); the bench writes only collections of its own.

/**
 * The index definitions of core's resources collection (not public), so the raw baselines write their own
 * collection under the same indexes and compare like with like.
 */
export async function resourceIndexes(db) {
  return (await db.collection("resources").indexes()).filter((index) => index.name !== "_id_");
}

/** An account's resources whose outbox still holds an event not copied to the events list (not public). */
export function resourcesWithPendingEvents(db, account) {
  return db.collection("resources").countDocuments({ account, "pending_events.0": { $exists: true } });
}
