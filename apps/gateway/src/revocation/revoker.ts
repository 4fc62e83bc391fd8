import { KeyKind, REQUEST_ID_METADATA, RpcError, keyHash } from "@rms/proto";
import type { Logger } from "pino";
import type { CoreClients } from "../core.js";
import type { PendingRevocation, PendingRevocationStore } from "./pending-store.js";
import { MAX_CANDIDATES } from "./scan.js";

export const REVOKE_REASON = "seen over plain HTTP";
/** How often pending revocations are retried (and other gateways' pending ones learnt). */
export const REVOCATION_RETRY_MS = 2_000;
/**
 * Most pending revocations one gateway keeps in memory (CONTRACT.md section 8): about 2 MB of hashes. When full,
 * the oldest is dropped first; the store still holds it (when it could be written) and the retry finds it there.
 */
export const MAX_PENDING_IN_MEMORY = 10_000;
/** The revoker's warnings (keys left pending, keys not checked over the address limit) come at most this often. */
export const REVOCATION_LOG_INTERVAL_MS = 1_000;

/** Core's answers that mean "nothing to revoke": not a key, or one that cannot be used (revoked, expired). */
const NOTHING_TO_REVOKE = new Set(["api_key_invalid", "api_key_expired", "api_key_revoked"]);

/** `unreachable`: core (or its database) could not be asked now; `failed`: core answered with another error. */
type Outcome = "revoked" | "nothing" | "unreachable" | "failed";

export interface KeyRevokerOptions {
  readonly retryMs?: number;
  /** MAX_PENDING_IN_MEMORY unless set (tests). */
  readonly maxPending?: number;
}

/** At most one line per interval; the lines left out meanwhile are counted in the next one. */
class ThrottledLog {
  private last = Number.NEGATIVE_INFINITY;
  private skipped = 0;

  constructor(private readonly intervalMs: number) {}

  write(log: (skipped: number) => void): void {
    const now = Date.now();
    if (now - this.last < this.intervalMs) {
      this.skipped++;
      return;
    }
    this.last = now;
    const skipped = this.skipped;
    this.skipped = 0;
    log(skipped);
  }
}

/**
 * Revokes keys that were seen over plain HTTP. A revocation that cannot reach
 * core now is not lost: it is kept as pending (in the store, and in memory
 * while the store is unreachable too), the key is refused meanwhile
 * (`isPending`), and a timer retries until core has revoked it or said it is
 * not a usable key, also after a restart.
 */
export class KeyRevoker {
  /** Pending revocations by secret hash (never the secret), oldest first: this process's and those read from the store. */
  private readonly pending = new Map<string, PendingRevocation>();
  /** Pending ones not yet written to the store. */
  private readonly unsaved = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private readonly maxPending: number;
  private retrying: Promise<void> | undefined;
  /** Until then, core is taken as unreachable: new candidates go straight to pending (the retry asks core). */
  private unreachableUntil = 0;
  private readonly retryMs: number;
  /** Dropped from memory since the last retry round (logged once per round). */
  private dropped = 0;
  private readonly pendingLog = new ThrottledLog(REVOCATION_LOG_INTERVAL_MS);
  private readonly overLimitLog = new ThrottledLog(REVOCATION_LOG_INTERVAL_MS);

  constructor(
    private readonly core: Pick<CoreClients, "admin">,
    private readonly store: PendingRevocationStore,
    private readonly logger: Logger,
    options: KeyRevokerOptions = {},
  ) {
    this.retryMs = options.retryMs ?? REVOCATION_RETRY_MS;
    this.maxPending = options.maxPending ?? MAX_PENDING_IN_MEMORY;
    this.timer = setInterval(() => void this.retryPending(), this.retryMs);
    this.timer.unref();
    void this.retryPending();
  }

  /** True while a revocation of this secret is pending: the key must be refused as revoked. */
  isPending(secret: string): boolean {
    return this.pending.has(keyHash(secret));
  }

  /** How many pending revocations this gateway holds in memory (at most MAX_PENDING_IN_MEMORY). */
  get pendingCount(): number {
    return this.pending.size;
  }

  /**
   * The plain-HTTP path: at most MAX_CANDIDATES keys of one request are checked, each costing one token of the
   * client address's bucket (`takeTokens(n)` answers how many of n it got; one that rejects, the limiter's store
   * being down, lets them all through: a leaked key is still revoked). Never throws.
   */
  async revokeSeen(candidates: readonly string[], requestId: string, takeTokens: (count: number) => Promise<number>): Promise<void> {
    const checked = candidates.slice(0, MAX_CANDIDATES);
    if (checked.length === 0) return;
    const granted = await takeTokens(checked.length).catch(() => checked.length);
    if (granted < checked.length) {
      this.overLimitLog.write((skipped) =>
        this.logger.warn(
          { request_id: requestId, not_checked: checked.length - granted, lines_skipped: skipped },
          "keys seen over plain HTTP not checked: the client address is over its rate limit",
        ),
      );
    }
    await this.revokeLeaked(checked.slice(0, granted), requestId);
  }

  /**
   * Revokes each leaked secret or restricted key now, or records it as pending; never throws. One after the
   * other: once core is found unreachable, the rest go straight to pending without asking it.
   */
  async revokeLeaked(secrets: readonly string[], requestId: string): Promise<void> {
    const kept: PendingRevocation[] = [];
    for (const secret of secrets) {
      const hash = keyHash(secret);
      // Already pending: refused already, and the retry asks core.
      if (this.pending.has(hash)) continue;
      if (Date.now() >= this.unreachableUntil) {
        const outcome = await this.revoke(hash, requestId);
        if (outcome === "revoked" || outcome === "nothing") continue;
      }
      const record = { hash, since: new Date() };
      if (this.remember(record)) kept.push(record);
    }
    if (kept.length === 0) return;
    this.pendingLog.write((skipped) =>
      this.logger.warn(
        { request_id: requestId, keys: kept.length, pending: this.pending.size, lines_skipped: skipped },
        "keys seen over plain HTTP could not be revoked yet: refused until core revokes them",
      ),
    );
    await Promise.all(kept.map((record) => this.save(record)));
  }

  /**
   * Keeps a pending revocation in memory, within the cap. A new one (`seen`) makes room by dropping the oldest
   * kept; one read from the store only takes free room (it stays in the store, and the oldest there are read
   * first, so they come in as room frees). False when not kept.
   */
  private remember(record: PendingRevocation, from: "seen" | "store" = "seen"): boolean {
    if (this.pending.has(record.hash)) return false;
    if (this.pending.size >= this.maxPending) {
      if (from === "store") return false;
      const oldest = this.pending.keys().next().value as string;
      this.pending.delete(oldest);
      this.unsaved.delete(oldest);
      this.dropped++;
    }
    this.pending.set(record.hash, record);
    if (from === "seen") this.unsaved.add(record.hash);
    return true;
  }

  /** One round of retries: saves what is unsaved, learns the store's pending ones, retries each. */
  retryPending(): Promise<void> {
    this.retrying ??= this.retryRound().finally(() => (this.retrying = undefined));
    return this.retrying;
  }

  private async retryRound(): Promise<void> {
    if (this.dropped > 0) {
      this.logger.warn(
        { dropped: this.dropped, kept: this.pending.size, most: this.maxPending },
        "pending revocations dropped from memory, oldest first (those written to the store are still retried from there)",
      );
      this.dropped = 0;
    }
    for (const hash of [...this.unsaved]) {
      const record = this.pending.get(hash);
      if (record) await this.save(record);
    }
    try {
      for (const record of await this.store.list()) this.remember(record, "store");
    } catch {
      // The store is unreachable: retry what is known in memory.
    }
    for (const record of [...this.pending.values()]) {
      const outcome = await this.revoke(record.hash, undefined);
      // Core cannot be asked now: the next round tries again, rather than every pending key failing in turn.
      if (outcome === "unreachable") break;
      if (outcome === "failed") continue;
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
      this.unreachableUntil = 0;
      if (!key || (key.kind !== KeyKind.SECRET && key.kind !== KeyKind.RESTRICTED)) return "nothing";
      // By the hash of the secret it saw, not by id: the gateway's credential revokes only keys presented to it.
      await this.core.admin.revokeKey({ secretHash: hash, reason: REVOKE_REASON }, options);
      this.logger.warn({ request_id: requestId, key_id: key.id }, "API key revoked: it was sent over plain HTTP");
      return "revoked";
    } catch (error) {
      if (error instanceof RpcError && NOTHING_TO_REVOKE.has(error.code)) return "nothing";
      if (error instanceof RpcError && error.code === "service_unavailable") {
        this.unreachableUntil = Date.now() + this.retryMs;
        return "unreachable";
      }
      return "failed";
    }
  }

  close(): void {
    clearInterval(this.timer);
  }
}
