import { walkDocuments } from "../parts.js";
import type { MigrationStep } from "../step.js";

/**
 * Idempotency records whose answer a gateway recorded as HTTP bytes (`status`, `body`, `headers`), before core kept the
 * records, become locks held until the record expires. Core's records hold the reply message, which the HTTP bytes
 * cannot be turned back into (the record does not say which call answered them), so the first answer is not replayed
 * any more; a repeat of the same request is refused as in use (409, retry later) and another request under the key as
 * a reuse (400) until the record expires, as 1.4.0 also answers them once converted. The request never runs twice.
 * 1.4.0 writes no such record (its gateway keeps none); one can be left only by a build before it, for 24 hours.
 */
export const step: MigrationStep = {
  id: "0003-gateway-idempotency-answers",
  release: "1.4.1",
  kind: "expand",
  summary: "turns idempotency records holding a gateway's HTTP answer into locks held until they expire (never run twice)",
  parts: [
    walkDocuments({
      collection: "idempotency_keys",
      where: { completed: true, answer: { $exists: false } },
      what: "records holding a gateway's HTTP answer",
      update: [
        {
          $set: {
            completed: false,
            owner: "migration 0003",
            locked_until: { $ifNull: ["$expires_at", { $add: ["$created", 24 * 60 * 60 * 1000] }] },
          },
        },
        { $unset: ["status", "body", "headers"] },
      ],
    }),
  ],
};
