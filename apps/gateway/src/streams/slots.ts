import { randomBytes } from "node:crypto";
import { isDuplicateKeyError } from "@rms/proto";
import type { Collection, Db } from "mongodb";
import type { Logger } from "pino";
import type { Indexed } from "../indexes.js";

/** A stream's place among its key's (at most `perKey`); given back when the stream ends. */
export interface StreamSlot {
  release(): void;
}

/** The places of every key's streams: the 11th stream of a key finds none (429 `too_many_streams`). */
export interface StreamSlots {
  /** A free place of `keyId` among `perKey`, or null when every one is taken. */
  take(keyId: string, perKey: number): Promise<StreamSlot | null>;
  close(): Promise<void>;
}

/** One gateway's count per key (RATE_LIMIT_STORE=memory: like the rate limits, each gateway counts its own). */
export class MemoryStreamSlots implements StreamSlots {
  private readonly open = new Map<string, number>();

  async take(keyId: string, perKey: number): Promise<StreamSlot | null> {
    const count = this.open.get(keyId) ?? 0;
    if (count >= perKey) return null;
    this.open.set(keyId, count + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const left = (this.open.get(keyId) ?? 1) - 1;
        if (left <= 0) this.open.delete(keyId);
        else this.open.set(keyId, left);
      },
    };
  }

  async close(): Promise<void> {}
}

/** A held place: `<keyId>/<n>`, the gateway process holding it, and when its hold lapses unless renewed. */
interface SlotDocument {
  _id: string;
  gateway: string;
  expires_at: Date;
}

export const STREAM_SLOTS_COLLECTION = "stream_slots";
/** How long a place is held without renewal: a gateway that died frees its keys' places after this. */
export const SLOT_LEASE_MS = 30_000;
/** How often a gateway renews every place it holds (one write for all of them). */
const RENEW_EVERY_MS = 10_000;

/**
 * Places shared by every gateway through MongoDB (RATE_LIMIT_STORE=mongodb, as the rate limits), in the "slots" shape
 * of docs/architecture.md: a key's n-th place is one document `<keyId>/<n>`, taken by an upsert that matches only a
 * lapsed hold (a live one makes it a duplicate key: taken), so no two streams ever hold one place. Each gateway
 * renews all the places it holds with one `updateMany` every 10 s; a gateway that dies leaves holds that lapse
 * after SLOT_LEASE_MS, and a TTL index removes them. A stream's end deletes its place.
 */
export class MongoStreamSlots implements StreamSlots, Indexed {
  private readonly slots: Collection<SlotDocument>;
  private readonly gateway = `${process.pid}-${randomBytes(6).toString("hex")}`;
  private readonly timer: NodeJS.Timeout;

  constructor(
    db: Db,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.slots = db.collection<SlotDocument>(STREAM_SLOTS_COLLECTION);
    this.timer = setInterval(() => void this.renew(), RENEW_EVERY_MS);
    this.timer.unref();
  }

  async ensureIndexes(): Promise<void> {
    await this.slots.createIndex({ gateway: 1 }, { name: "gateway" });
    await this.slots.createIndex({ expires_at: 1 }, { name: "expires_at", expireAfterSeconds: 0 });
  }

  async take(keyId: string, perKey: number): Promise<StreamSlot | null> {
    for (let n = 0; n < perKey; n++) {
      const _id = `${keyId}/${n}`;
      try {
        await this.slots.updateOne(
          { _id, expires_at: { $lt: new Date(this.now()) } },
          { $set: { gateway: this.gateway, expires_at: new Date(this.now() + SLOT_LEASE_MS) } },
          { upsert: true },
        );
      } catch (error) {
        if (isDuplicateKeyError(error)) continue;
        throw error;
      }
      let released = false;
      return {
        release: () => {
          if (released) return;
          released = true;
          this.slots
            .deleteOne({ _id, gateway: this.gateway })
            .catch((err: unknown) => this.logger.warn({ err: String(err) }, "a stream's place was not given back; its hold lapses"));
        },
      };
    }
    return null;
  }

  private async renew(): Promise<void> {
    try {
      await this.slots.updateMany({ gateway: this.gateway }, { $set: { expires_at: new Date(this.now() + SLOT_LEASE_MS) } });
    } catch (error) {
      this.logger.warn({ err: error instanceof Error ? error.message : String(error) }, "stream places not renewed; retrying");
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.slots.deleteMany({ gateway: this.gateway }).catch(() => undefined);
  }
}
