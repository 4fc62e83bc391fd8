import type { Db } from "mongodb";
import { dropIndexes } from "../parts.js";
import type { MigrationStep, StepPart } from "../step.js";

/** The TTL index's name on every collection whose documents expire (storage/expiry.ts declares it at start). */
const TTL_INDEX = "expires_at_ttl";

/**
 * The TTL index `expires_at_ttl` of every collection, where an earlier build declared it without its partial filter
 * (every live document in it), is dropped; core's start then declares it partial (the documents that never expire
 * are not in it). Between the two, expiry only waits. 1.4.0 replaced it at each start; every collection is looked at,
 * as the index is on each that keeps documents for a time.
 */
const everyCollection: StepPart = {
  async pending(db) {
    const lines = await Promise.all((await collectionNames(db)).map((name) => notPartial(name).pending(db)));
    const found = lines.filter((line): line is string => line !== null);
    return found.length === 0 ? null : found.join("; ");
  },
  async batch(db) {
    let changed = 0;
    for (const name of await collectionNames(db)) changed += (await notPartial(name).batch(db, null, 0)).changed;
    return { after: null, changed };
  },
};

function notPartial(collection: string): StepPart {
  return dropIndexes(collection, [TTL_INDEX], (index) => index.partialFilterExpression === undefined);
}

async function collectionNames(db: Db): Promise<string[]> {
  return (await db.listCollections({ type: "collection" }, { nameOnly: true }).toArray()).map((c) => c.name).filter((name) => !name.startsWith("system."));
}

export const step: MigrationStep = {
  id: "0004-partial-expiry-indexes",
  release: "1.4.1",
  kind: "expand",
  summary: "drops expires_at_ttl indexes declared without their partial filter; the start declares them partial",
  parts: [everyCollection],
};
