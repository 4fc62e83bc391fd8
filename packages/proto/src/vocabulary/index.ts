import { ACCOUNTS_VOCABULARY } from "./accounts.js";
import { DASHBOARD_SESSIONS_VOCABULARY } from "./dashboard-sessions.js";
import { EVENTS_VOCABULARY } from "./events.js";
import { FILES_VOCABULARY } from "./files.js";
import { JOBS_VOCABULARY } from "./jobs.js";
import { REQUEST_LOGS_VOCABULARY } from "./request-logs.js";
import { RESOURCES_VOCABULARY } from "./resources.js";
import type { Vocabulary } from "./vocabulary.js";
import { WEBHOOK_ENDPOINTS_VOCABULARY } from "./webhook-endpoints.js";
import { WEBHOOKS_VOCABULARY } from "./webhooks.js";

export type { Vocabulary } from "./vocabulary.js";
export * from "./accounts.js";
export * from "./dashboard-sessions.js";
export * from "./events.js";
export * from "./files.js";
export * from "./jobs.js";
export * from "./metadata.js";
export * from "./request-logs.js";
export * from "./resources.js";
export * from "./webhook-endpoints.js";
export * from "./webhooks.js";

/**
 * Every domain's vocabulary: a new kind adds its file and one line here. Its order is the order the API
 * lists what is derived below (the scopes a secret key is granted, the event types an error names), so a
 * new domain goes last. Core's domain list (`apps/core/src/domains.ts`) holds the same domains, by name.
 */
export const VOCABULARIES = [
  RESOURCES_VOCABULARY,
  ACCOUNTS_VOCABULARY,
  JOBS_VOCABULARY,
  WEBHOOK_ENDPOINTS_VOCABULARY,
  WEBHOOKS_VOCABULARY,
  EVENTS_VOCABULARY,
  FILES_VOCABULARY,
  REQUEST_LOGS_VOCABULARY,
  DASHBOARD_SESSIONS_VOCABULARY,
] as const satisfies readonly Vocabulary[];

type Each = (typeof VOCABULARIES)[number];

/** Every kind of id the service makes; nothing else may be minted. */
export type IdPrefix = Each["idPrefixes"][number];
export const ID_PREFIXES: readonly IdPrefix[] = VOCABULARIES.flatMap((v) => v.idPrefixes);

/** Every event type the service records: what `enabled_events` may name, and the set a `type` prefix covers. */
export type EventType = Each["eventTypes"][number];
export const EVENT_TYPES: readonly EventType[] = VOCABULARIES.flatMap((v) => v.eventTypes);

/** Every scope a key can grant (CONTRACT.md section 4, in ../shared/docs/). */
export type Scope = Each["scopes"][number];
export const SCOPES: readonly Scope[] = VOCABULARIES.flatMap((v) => v.scopes);

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** The scopes `granted` amounts to: each with those it implies (`jobs:write` brings `jobs:read`), in SCOPES order. */
export function withImpliedScopes(granted: readonly Scope[]): Scope[] {
  const set = new Set<string>(granted);
  for (const vocabulary of VOCABULARIES as readonly Vocabulary[]) {
    for (const [scope, implied] of Object.entries(vocabulary.impliedScopes ?? {})) if (set.has(scope)) for (const more of implied) set.add(more);
  }
  return SCOPES.filter((s) => set.has(s));
}

/** Characters after an id's `<prefix>_`: its creation time, then random bits, in base62. */
export const ID_SUFFIX_CHARS = 22;

/** The pattern of an id of `prefix` (no anchors, for use inside other patterns). */
export function idPattern(prefix: IdPrefix): string {
  return `${prefix}_[0-9A-Za-z]{${ID_SUFFIX_CHARS}}`;
}

/** A well-formed id of `prefix` that names no object (for examples). */
export function exampleId(prefix: IdPrefix): string {
  return `${prefix}_${"0".repeat(ID_SUFFIX_CHARS)}`;
}
