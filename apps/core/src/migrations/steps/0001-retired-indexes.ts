import { dropIndexes } from "../parts.js";
import type { MigrationStep } from "../step.js";

/**
 * Indexes earlier builds declared that no query of 1.4.0 or later uses, by collection. 1.4.0 dropped some of them at
 * each start and kept others unused; each costs a write per insert and update. Names only, per collection: several of
 * these names (`tenant_order`, `idempotency_unique`) are indexes in use on other collections.
 */
const RETIRED: Readonly<Record<string, readonly string[]>> = {
  // The filter's indexes over tombstones too, and the unique key slot creates had before the key's record decided them.
  resources: [
    "idempotency_unique",
    "live_order",
    "tenant_order",
    "tenant_status_order",
    "tenant_metadata_status_order",
    "tenant_name_status_order",
    "tenant_metadata_order",
    "id_version",
    "outbox_pending",
    "tombstones",
  ],
  // The unique key slot of uploads before they ran under core's key protocol (no file carries the field now).
  files: ["idempotency_unique"],
  // The claim's index before the fair claim, the periodic delete's before the TTL index, and the first outbox indexes.
  jobs: ["unfinished_id", "status_finished_at", "outbox_pending", "tombstones"],
  webhook_endpoints: ["outbox_pending", "tombstones"],
  // The periodic deletes' indexes, before retention by TTL index; the due index before the partial one.
  events: ["created"],
  webhook_deliveries: ["due", "created"],
  webhook_attempts: ["created"],
  // The gateway's rate-limit tokens: the periodic delete's index, before their TTL index.
  rate_limit_tokens: ["window"],
};

export const step: MigrationStep = {
  id: "0001-retired-indexes",
  release: "1.4.1",
  kind: "expand",
  summary: "drops the indexes earlier builds declared and no query of 1.4.0 or later uses (1.4.0 dropped some at each start)",
  parts: Object.entries(RETIRED).map(([collection, names]) => dropIndexes(collection, names)),
};
