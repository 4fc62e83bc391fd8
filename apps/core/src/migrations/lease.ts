import { isDuplicateKeyError } from "@rms/proto";
import type { Db } from "mongodb";
import { LeaseQueue, type Leased } from "../storage/lease.js";

/** The one lease every process that runs migrations takes first (one document). */
export const MIGRATION_LEASE_COLLECTION = "migration_lease";
const LEASE_ID = "migrations";

interface LeaseDocument extends Leased {
  _id: string;
  /** The release of the holder, for `rms migrate status`. */
  release?: string;
}

/** The lease as held: its epoch guards every record write; `lost` once a renewal found it taken over. */
export interface HeldLease {
  readonly epoch: number;
  readonly lost: boolean;
  release(): Promise<void>;
}

/** Who holds the lease now, if anyone (`until` in Unix ms). */
export interface LeaseHolder {
  readonly owner: string;
  readonly release: string | null;
  readonly until: number;
}

/**
 * Takes the migration lease, or answers null while another process holds it. It is held `leaseMs` and renewed
 * every third of that while held, so a holder that dies (SIGKILL, a lost machine) frees it within `leaseMs`.
 */
export async function claimMigrationLease(db: Db, owner: string, release: string, leaseMs: number): Promise<HeldLease | null> {
  const collection = db.collection<LeaseDocument>(MIGRATION_LEASE_COLLECTION);
  await collection.updateOne({ _id: LEASE_ID }, { $setOnInsert: { lease_until: null } }, { upsert: true }).catch((error: unknown) => {
    // Two processes made it at once: one insert won, which is all that is needed.
    if (!isDuplicateKeyError(error)) throw error;
  });
  const queue = new LeaseQueue(collection, { owner, leaseMs });
  const claimed = await queue.claim({ _id: LEASE_ID });
  if (!claimed) return null;
  const epoch = claimed.epoch ?? 0;
  let lost = !(await queue.update(LEASE_ID, epoch, { $set: { release } }));
  const heartbeat = setInterval(() => {
    queue.renew(LEASE_ID, epoch).then(
      (held) => {
        if (!held) lost = true;
      },
      // The database did not answer: the next beat tries again; the lease runs out if none gets through.
      () => undefined,
    );
  }, leaseMs / 3);
  heartbeat.unref();
  return {
    epoch,
    get lost() {
      return lost;
    },
    async release() {
      clearInterval(heartbeat);
      await queue.release(LEASE_ID, epoch).catch(() => undefined);
    },
  };
}

/** The lease's holder while it is held (for status). */
export async function migrationLeaseHolder(db: Db, now = Date.now()): Promise<LeaseHolder | null> {
  const lease = await db.collection<LeaseDocument>(MIGRATION_LEASE_COLLECTION).findOne({ _id: LEASE_ID });
  if (!lease?.lease_owner || !lease.lease_until || lease.lease_until <= now) return null;
  return { owner: lease.lease_owner, release: lease.release ?? null, until: lease.lease_until };
}
