import type { Vocabulary } from "./vocabulary.js";

/**
 * Dashboard sessions (CONTRACT.md section 13, in ../shared/docs/): a sign-in link's short-lived restricted key. Its
 * key is an ordinary `key_` (the accounts' vocabulary); only a secret key may make one, so it adds no scope.
 */
export const DASHBOARD_SESSIONS_VOCABULARY = {
  domain: "dashboard-sessions",
  idPrefixes: [],
  eventTypes: [],
  scopes: [],
} as const satisfies Vocabulary;
