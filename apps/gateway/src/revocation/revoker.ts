import { KeyKind, REQUEST_ID_METADATA, RpcError, keyHash } from "@rms/proto";
import type { Logger } from "pino";
import type { CoreClients } from "../core.js";
import type { PendingRevocation, PendingRevocationStore } from "./pending-store.js";

export const REVOKE_REASON = "seen over plain HTTP";
/** How often pending revocations are retried (and other gateways' pending ones learnt). */
export const REVOCATION_RETRY_MS = 2_000;

/** Core's answers that mean "nothing to revoke": not a key, or one that can no longer be used. */
const NOTHING_TO_REVOKE = new Set(["api_key_invalid", "api_key_expired", "api_key_revoked"]);

type Outcome = "revoked" | "nothing" | "failed";

/**
 * Revokes keys that were seen over plain HTTP. A revocation that cannot reach
 * core now is not lost: it is kept as pending (in the store, and in memory
 * while the store is unreachable too), the key is refused meanwhile
 * (`isPending`), and a timer retries until core has revoked it or said it is
 * not a usable key, also after a restart.
 */
export class KeyRevoker {
  /** Pending revocations by secret hash: this process's and those read from the store. */
  private readonly pending = new Map<string, PendingRevocation>();
  /** Pending ones not yet written to the store. */
  private readonly unsaved = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private retrying: Promise<void> | undefined;

  constructor(
    private readonly core: Pick<CoreClients, "admin">,
    private readonly store: PendingRevocationStore,
    private readonly logger: Logger,
    retryMs: number = REVOCATION_RETRY_MS,
  ) {
    this.timer = setInterval(() => void this.retryPending(), retryMs);
    this.timer.unref();
    void this.retryPending();
  }

  /** True while a revocation of this secret is pending: the key must be refused as revoked. */
  isPending(secret: string): boolean {
    return this.pending.has(keyHash(secret));
  }

  /** Revokes each leaked secret or restricted key now, or records it as pending; never throws. */
  async revokeLeaked(secrets: readonly string[], requestId: string): Promise<void> {
    await Promise.all(
      secrets.map(async (secret) => {
        const hash = keyHash(secret);
        if ((await this.revoke(hash, requestId)) !== "failed") return;
        const record = { hash, since: new Date() };
        if (this.pending.has(record.hash)) return;
        this.pending.set(record.hash, record);
        this.unsaved.add(record.hash);
        this.logger.warn({ request_id: requestId }, "a key seen over plain HTTP could not be revoked yet: refused until core revokes it");
        await this.save(record);
      }),
    );
  }

  /** One round of retries: saves what is unsaved, learns the store's pending ones, retries each. */
  retryPending(): Promise<void> {
    this.retrying ??= this.retryRound().finally(() => (this.retrying = undefined));
    return this.retrying;
  }

  private async retryRound(): Promise<void> {
    for (const hash of [...this.unsaved]) {
      const record = this.pending.get(hash);
      if (record) await this.save(record);
    }
    try {
      for (const record of await this.store.list()) if (!this.pending.has(record.hash)) this.pending.set(record.hash, record);
    } catch {
      // The store is unreachable: retry what is known in memory.
    }
    for (const record of [...this.pending.values()]) {
      if ((await this.revoke(record.hash, undefined)) === "failed") continue;
      try {
        await this.store.remove(record.hash);
        this.pending.delete(record.hash);
        this.unsaved.delete(record.hash);
      } catch {
        // Still in the store: the next round finds the key revoked and removes it.
      }
    }
  }

  private async save(record: PendingRevocation): Promise<void> {
    try {
      await this.store.add(record);
      this.unsaved.delete(record.hash);
    } catch {
      // Kept in memory; the next round writes it.
    }
  }

  /** Revokes the key whose keyHash this is: only the hash travels, so the secret is never kept. */
  private async revoke(hash: string, requestId: string | undefined): Promise<Outcome> {
    const options = requestId ? { metadata: { [REQUEST_ID_METADATA]: requestId } } : {};
    try {
      const { key } = await this.core.admin.verifyKey({ secretHash: hash }, options);
      if (!key || (key.kind !== KeyKind.SECRET && key.kind !== KeyKind.RESTRICTED)) return "nothing";
      await this.core.admin.revokeKey({ keyId: key.id, reason: REVOKE_REASON }, options);
      this.logger.warn({ request_id: requestId, key_id: key.id }, "API key revoked: it was sent over plain HTTP");
      return "revoked";
    } catch (error) {
      if (error instanceof RpcError && NOTHING_TO_REVOKE.has(error.code)) return "nothing";
      return "failed";
    }
  }

  close(): void {
    clearInterval(this.timer);
  }
}
