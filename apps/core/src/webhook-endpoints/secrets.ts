import { SECRETS_MAX, type StoredSecret } from "./model.js";

/** The secrets that still sign at `nowMs`, newest first (expired ones are ignored wherever they linger). */
export function validSecrets(secrets: readonly StoredSecret[], nowMs: number): StoredSecret[] {
  return secrets.filter((s) => s.expires_at === null || s.expires_at > nowMs);
}

/**
 * The keys after a rotation: the new one first (no expiry), then the ones still valid, each
 * expiring `graceS` seconds from now at the latest (an earlier expiry stays); `graceS` 0 drops them.
 * At most SECRETS_MAX are kept, so rotating in a loop cannot grow the signature header without bound.
 */
export function rotatedSecrets(current: readonly StoredSecret[], next: StoredSecret, nowMs: number, graceS: number): StoredSecret[] {
  const until = nowMs + graceS * 1000;
  // Each kept key keeps its scheme (and public key): a rotation between schemes signs in both during the grace.
  const kept =
    graceS === 0 ? [] : validSecrets(current, nowMs).map((s) => ({ ...s, expires_at: s.expires_at === null ? until : Math.min(s.expires_at, until) }));
  return [{ ...next, expires_at: null }, ...kept].slice(0, SECRETS_MAX);
}
