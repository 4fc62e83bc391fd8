import { createHash } from "node:crypto";
import type { Collection, Db } from "mongodb";

/**
 * A key seen over plain HTTP whose revocation has not reached core yet.
 * It keeps the secret: core stores only hashes and revokes by key id, so the
 * secret is what finds the key once core answers. That secret already crossed
 * the network in clear; the record is deleted as soon as core has revoked it.
 */
export interface PendingRevocation {
  /** SHA-256 (hex) of the secret: what requests are refused by meanwhile. */
  readonly hash: string;
  readonly secret: string;
  readonly since: Date;
}

export const PENDING_REVOCATIONS_COLLECTION = "pending_revocations";

export function secretHash(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** Where pending revocations survive a gateway restart and are shared by several gateways. */
export interface PendingRevocationStore {
  add(pending: PendingRevocation): Promise<void>;
  list(): Promise<PendingRevocation[]>;
  remove(hash: string): Promise<void>;
}

interface PendingDocument {
  _id: string;
  secret: string;
  since: Date;
}

export class MongoPendingRevocationStore implements PendingRevocationStore {
  private readonly pending: Collection<PendingDocument>;

  constructor(db: Db) {
    this.pending = db.collection<PendingDocument>(PENDING_REVOCATIONS_COLLECTION);
  }

  async add({ hash, secret, since }: PendingRevocation): Promise<void> {
    await this.pending.updateOne({ _id: hash }, { $setOnInsert: { secret, since } }, { upsert: true });
  }

  async list(): Promise<PendingRevocation[]> {
    const documents = await this.pending.find({}).sort({ since: 1 }).limit(1_000).toArray();
    return documents.map((d) => ({ hash: d._id, secret: d.secret, since: d.since }));
  }

  async remove(hash: string): Promise<void> {
    await this.pending.deleteOne({ _id: hash });
  }
}
