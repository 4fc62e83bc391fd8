import { keyHash } from "@rms/proto";
import type { Principal } from "./principal.js";

/** How long a verified key's principal is reused without asking core's VerifyKey again. */
export const PRINCIPAL_TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;

/**
 * Principals of keys verified recently, by a hash of the presented key (the key
 * itself is never kept). Safe to reuse because what it holds never changes for a
 * key (account, mode, kind, scopes): whether the key is still live (revoked,
 * expired) is re-checked by core inside every operation call, which refuses it
 * with 401 and makes the gateway drop the entry (docs/performance.md). An operation
 * the gateway answers alone (the request logs, the account) makes no such call, so
 * it never takes a key from here: core verifies its key every time.
 */
export class PrincipalCache {
  private readonly entries = new Map<string, { principal: Principal; until: number }>();

  constructor(
    private readonly ttlMs = PRINCIPAL_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  get(secret: string): Principal | undefined {
    const id = keyHash(secret);
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (entry.until <= this.now()) {
      this.entries.delete(id);
      return undefined;
    }
    return entry.principal;
  }

  set(secret: string, principal: Principal): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(keyHash(secret), { principal, until: this.now() + this.ttlMs });
  }

  drop(secret: string): void {
    this.entries.delete(keyHash(secret));
  }

  get size(): number {
    return this.entries.size;
  }
}
