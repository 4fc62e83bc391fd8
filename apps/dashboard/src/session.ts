/**
 * The tab's sign-in (CONTRACT.md section 13): a key from the link's fragment (`#key=rk_test_...`, never sent to a
 * server) or pasted into the sign-in page, kept in this tab's sessionStorage only (no cookie, nothing shared with
 * other tabs, gone when the tab closes) and sent as `Authorization: Bearer`. Signing out forgets it.
 */

const KEY_ITEM = "rms.dashboard.key";
const SCOPES_ITEM = "rms.dashboard.scopes";
const KEY_PATTERN = /^(sk|rk|pk)_(live|test)_[0-9A-Za-z]{16,}$/;

/** Every scope the dashboard's controls may need (CONTRACT.md section 4). */
export const ALL_SCOPES = [
  "resources:read",
  "resources:write",
  "jobs:read",
  "jobs:write",
  "webhooks:write",
  "events:read",
  "files:read",
  "files:write",
  "request_logs:read",
] as const;
export type Scope = (typeof ALL_SCOPES)[number];

export function looksLikeKey(text: string): boolean {
  return KEY_PATTERN.test(text.trim());
}

/**
 * Takes a sign-in link's key out of the address bar: the key its `#key=...` fragment carries (null when none or not
 * a key), and the fragment gone from the address bar and the history in every case, a malformed key's too.
 */
export function takeKeyFromAddressBar(): string | null {
  const { hash, pathname, search } = window.location;
  if (!hash.includes("key=")) return null;
  window.history.replaceState(window.history.state, "", pathname + search);
  return keyFromFragment(hash);
}

/** The key a `#key=...` fragment carries, or null. */
export function keyFromFragment(hash: string): string | null {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const key = params.get("key");
  return key && looksLikeKey(key) ? key.trim() : null;
}

export function storedKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_ITEM);
  } catch {
    return null;
  }
}

export function storeKey(key: string): void {
  sessionStorage.setItem(KEY_ITEM, key.trim());
  sessionStorage.removeItem(SCOPES_ITEM);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY_ITEM);
  sessionStorage.removeItem(SCOPES_ITEM);
}

export function storedScopes(): Scope[] | null {
  const text = sessionStorage.getItem(SCOPES_ITEM);
  if (!text) return null;
  try {
    const parsed = JSON.parse(text) as unknown;
    return Array.isArray(parsed) ? (parsed.filter((s) => (ALL_SCOPES as readonly string[]).includes(s)) as Scope[]) : null;
  } catch {
    return null;
  }
}

export function storeScopes(scopes: readonly Scope[]): void {
  sessionStorage.setItem(SCOPES_ITEM, JSON.stringify(scopes));
}

/** What a key's prefix says: its mode and kind, for the header. */
export function describeKey(key: string): { mode: "live" | "test"; kind: "secret" | "restricted" | "publishable" } {
  const [prefix, mode] = key.split("_");
  return { mode: mode === "live" ? "live" : "test", kind: prefix === "sk" ? "secret" : prefix === "pk" ? "publishable" : "restricted" };
}
