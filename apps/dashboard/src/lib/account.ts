/**
 * Which account and mode a key acts in, and whether it is a dashboard session's key, from `GET /v1/account`: the
 * header shows the account, a sign-in link for another key asks before switching, and signing out of a session
 * ends it (`POST /v1/dashboard_sessions/{id}/revoke`, which the session's own key may call).
 */

export interface AccountOfKey {
  readonly id: string;
  readonly livemode: boolean;
  /** The key's id (`key_...`): a dashboard session's id. */
  readonly apiKey: string;
  readonly keyKind: "secret" | "restricted" | "publishable";
  readonly dashboardSession: boolean;
}

/** What `GET /v1/account` answered, as kept in sessionStorage; null when the answer is not one. */
export function accountOf(body: unknown): AccountOfKey | null {
  const b = body as Record<string, unknown> | null;
  if (b?.["object"] !== "account" || typeof b["id"] !== "string" || typeof b["api_key"] !== "string") return null;
  const kind = b["key_kind"];
  return {
    id: b["id"],
    livemode: b["livemode"] === true,
    apiKey: b["api_key"],
    keyKind: kind === "secret" || kind === "publishable" ? kind : "restricted",
    dashboardSession: b["dashboard_session"] === true,
  };
}

/**
 * The key's account; null when this server has no `GET /v1/account` (404 `route_missing`: nothing to show). A key the
 * API refuses rejects with its answer (`status`, `body`), as the scope probes do.
 */
export async function fetchAccount(key: string, fetcher: typeof fetch = fetch): Promise<AccountOfKey | null> {
  const response = await fetcher("/v1/account", { headers: { Authorization: `Bearer ${key}` } });
  const body = (await response.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
  if (response.ok) return accountOf(body);
  if (response.status === 404 && body?.error?.code === "route_missing") return null;
  throw Object.assign(new Error(body?.error?.message ?? `The API answered HTTP ${response.status}.`), { status: response.status, body });
}

/** Ends a dashboard session with its own key (signing out). Best effort: the key is forgotten whatever the answer. */
export async function endSession(key: string, sessionId: string, fetcher: typeof fetch = fetch): Promise<boolean> {
  try {
    const response = await fetcher(`/v1/dashboard_sessions/${encodeURIComponent(sessionId)}/revoke`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}` },
      // Sent even when the page goes away right after.
      keepalive: true,
    });
    return response.ok;
  } catch {
    return false;
  }
}

/** An account in words: its id and mode ("acct_... (test mode)"). */
export function describeAccount(account: AccountOfKey): string {
  return `${account.id} (${account.livemode ? "live" : "test"} mode)`;
}
