import type { Vocabulary } from "./vocabulary.js";

/** Events (CONTRACT.md section 7, in ../shared/docs/): they record the other domains' types and have none of their own. */
export const EVENTS_VOCABULARY = {
  domain: "events",
  idPrefixes: ["evt"],
  eventTypes: [],
  scopes: ["events:read"],
} as const satisfies Vocabulary;
