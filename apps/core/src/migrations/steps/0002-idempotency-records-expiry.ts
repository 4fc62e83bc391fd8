import { walkDocuments } from "../parts.js";
import type { MigrationStep } from "../step.js";

/** The first use's 24 hours (CONTRACT section 5), as the records that lack `expires_at` were kept. */
const RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * Idempotency records written before they carried `expires_at` (by the gateway, before core kept the records) get
 * theirs: 24 hours after first use, or the end of their lock if later, as every record has since. Then the TTL index
 * removes them, and core reads `expires_at` alone. 1.4.0 did this at each start; it writes `expires_at` on every record.
 */
export const step: MigrationStep = {
  id: "0002-idempotency-records-expiry",
  release: "1.4.1",
  kind: "expand",
  summary: "gives idempotency records without expires_at theirs (first use + 24 h, or the lock's end if later)",
  parts: [
    walkDocuments({
      collection: "idempotency_keys",
      where: { expires_at: { $exists: false } },
      what: "records without expires_at",
      update: [{ $set: { expires_at: { $max: [{ $add: ["$created", RETENTION_MS] }, "$locked_until"] } } }],
    }),
  ],
};
