/**
 * The tab's sign-in (CONTRACT.md section 13): a key from the link's fragment (`#key=rk_test_...`, never sent to a
 * server) or pasted into the sign-in page, kept in this tab's sessionStorage only (no cookie, nothing shared with
 * other tabs, gone when the tab closes) and sent as `Authorization: Bearer`. Signing out forgets it.
 */

import { accountOf, type AccountOfKey } from "./lib/account";

const KEY_ITEM = "rms.dashboard.key";
const SCOPES_ITEM = "rms.dashboard.scopes";
const ACCOUNT_ITEM = "rms.dashboard.account";
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

/**
 * What a sign-in link's key does to this tab: signs in when the tab has no key, nothing when it is the key the tab
 * has, and otherwise waits for the user to say whether to switch (a link may lead to another account or mode).
 */
export function fragmentAction(current: string | null, fromLink: string | null): "none" | "sign_in" | "ask" {
  if (fromLink === null || fromLink === current) return "none";
  return current === null ? "sign_in" : "ask";
}

/** A link's key waiting for the user's answer (memory only: a reload forgets it, as the address bar already has). */
let linkKey: string | null = null;

export function holdLinkKey(key: string): void {
  linkKey = key;
}

/** The held link key, once: the app asks about it at start. */
export function takeLinkKey(): string | null {
  const key = linkKey;
  linkKey = null;
  return key;
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
  sessionStorage.removeItem(ACCOUNT_ITEM);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY_ITEM);
  sessionStorage.removeItem(SCOPES_ITEM);
  sessionStorage.removeItem(ACCOUNT_ITEM);
}

/** The account of the stored key, as learned at sign-in (null: not learned, or this server does not say). */
export function storedAccount(): AccountOfKey | null {
  const text = sessionStorage.getItem(ACCOUNT_ITEM);
  if (!text) return null;
  try {
    const kept = JSON.parse(text) as Record<string, unknown>;
    return accountOf({
      object: "account",
      id: kept["id"],
      livemode: kept["livemode"],
      api_key: kept["apiKey"],
      key_kind: kept["keyKind"],
      dashboard_session: kept["dashboardSession"],
    });
  } catch {
    return null;
  }
}

export function storeAccount(account: AccountOfKey | null): void {
  if (account) sessionStorage.setItem(ACCOUNT_ITEM, JSON.stringify(account));
  else sessionStorage.removeItem(ACCOUNT_ITEM);
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
