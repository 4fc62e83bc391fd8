import type { Collection, Db } from "mongodb";

/**
 * A key seen over plain HTTP whose revocation has not reached core yet. It
 * keeps only the key's hash (keyHash in @rms/proto, what core stores keys by),
 * never the secret: core finds the key by that hash. The record is deleted as
 * soon as core has revoked the key.
 */
export interface PendingRevocation {
  /** keyHash of the secret: what core finds the key by, and what requests are refused by meanwhile. */
  readonly hash: string;
  readonly since: Date;
}

export const PENDING_REVOCATIONS_COLLECTION = "pending_revocations";

/** Where pending revocations survive a gateway restart and are shared by several gateways. */
export interface PendingRevocationStore {
  add(pending: PendingRevocation): Promise<void>;
  list(): Promise<PendingRevocation[]>;
  remove(hash: string): Promise<void>;
}

interface PendingDocument {
  _id: string;
  since: Date;
}

export class MongoPendingRevocationStore implements PendingRevocationStore {
  private readonly pending: Collection<PendingDocument>;

  constructor(db: Db) {
    this.pending = db.collection<PendingDocument>(PENDING_REVOCATIONS_COLLECTION);
  }

  /** The retry loop's read: the oldest pending revocations first (`list`). */
  async ensureIndexes(): Promise<void> {
    await this.pending.createIndex({ since: 1 }, { name: "since" });
  }

  async add({ hash, since }: PendingRevocation): Promise<void> {
    await this.pending.updateOne({ _id: hash }, { $setOnInsert: { since } }, { upsert: true });
  }

  async list(): Promise<PendingRevocation[]> {
    const documents = await this.pending.find({}).sort({ since: 1 }).limit(1_000).toArray();
    return documents.map((d) => ({ hash: d._id, since: d.since }));
  }

  async remove(hash: string): Promise<void> {
    await this.pending.deleteOne({ _id: hash });
  }
}
