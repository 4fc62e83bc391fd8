import type { KeyDocument } from "./store.js";

/**
 * Verified keys by hash, for one core process, so that a request does not read
 * its key from the database every time. Correct only while every revocation goes
 * through this process (`revoked()` is called by RevokeKey): `rms start` runs one
 * core, so it turns the cache on; deployments with several cores leave it off
 * (KEY_CACHE_MS=0, the default). Expiry is checked on every use from the cached
 * document; revoked keys are never cached.
 */
export class KeyCache {
  private readonly entries = new Map<string, { key: KeyDocument; until: number }>();
  /** Bumped by every revocation: a lookup that began before one must not fill the cache. */
  private generation = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(hash: string, now = Date.now()): KeyDocument | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    if (entry.until <= now) {
      this.entries.delete(hash);
      return undefined;
    }
    return entry.key;
  }

  /** The generation to pass to `set` after the database read. */
  begin(): number {
    return this.generation;
  }

  set(hash: string, key: KeyDocument, generation: number, now = Date.now()): void {
    if (this.ttlMs <= 0 || generation !== this.generation || key.revoked_at !== null) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(hash, { key, until: now + this.ttlMs });
  }

  /** Called once a revocation is written: forget the key, and any lookup still in flight. */
  revoked(hash: string): void {
    this.generation++;
    this.entries.delete(hash);
  }
}
