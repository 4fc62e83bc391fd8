import type { Collection, Document } from "mongodb";

/**
 * Retention by TTL index. A document that may go carries `expires_at`, a BSON Date; the collection's TTL
 * index on it (`expireAfterSeconds: 0`) lets the server delete the document once that time has passed
 * (the server's TTL monitor runs once a minute, so a document goes within about a minute of it). A
 * document without the field never expires: that is how pending work and live objects stay.
 */
export const EXPIRES_AT = "expires_at";

/** The fields of a document that may expire. */
export interface Expiring {
  /** When the server's TTL monitor may delete the document; absent: kept. */
  expires_at?: Date;
}

/**
 * The fields of a document with an outbox that may expire once its events are out (a tombstone, a
 * finished job): the write that makes it expirable sets `retain_until` (and records its event in the
 * same write), and the relay, in the write that removes the last pending event, copies it to
 * `expires_at` (storage/relay.ts). So such a document never expires with an event still pending,
 * however long the relay is away.
 */
export interface RetainedUntil extends Expiring {
  retain_until?: Date;
}

/** What the TTL index holds: the documents that expire (a live object, pending work, has no `expires_at`). */
export const EXPIRING = { [EXPIRES_AT]: { $type: "date" } } as const;

/**
 * The TTL index on `expires_at`: each document goes at its own time. Partial: the documents that never expire (every
 * live resource, endpoint, pending job) are not in it, so their inserts write one index entry fewer. (An index of the
 * name with other options is a migration step's to drop: migrations/steps/0004-partial-expiry-indexes.ts.)
 */
export async function ensureExpiryIndex<D extends Document>(collection: Collection<D>): Promise<void> {
  await collection.createIndex({ [EXPIRES_AT]: 1 }, { expireAfterSeconds: 0, name: "expires_at_ttl", partialFilterExpression: EXPIRING });
}

/** `ms` after `fromMs` as the Date a TTL index reads. */
export function expiryAt(fromMs: number, ms: number): Date {
  return new Date(fromMs + ms);
}
