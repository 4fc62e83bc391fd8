import type { Vocabulary } from "./vocabulary.js";

/** Webhook deliveries (CONTRACT.md section 7, in ../shared/docs/): their attempts are read under the endpoints' scope. */
export const WEBHOOKS_VOCABULARY = {
  domain: "webhook-deliveries",
  idPrefixes: ["wa"],
  eventTypes: [],
  scopes: [],
} as const satisfies Vocabulary;

/** An attempt's `status`. */
export const ATTEMPT_STATUSES = ["succeeded", "failed"] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];

/** What made an attempt: the fan-out's schedule, a resend, or a recovery. */
export const ATTEMPT_TRIGGERS = ["scheduled", "manual", "recovery"] as const;
export type AttemptTrigger = (typeof ATTEMPT_TRIGGERS)[number];
