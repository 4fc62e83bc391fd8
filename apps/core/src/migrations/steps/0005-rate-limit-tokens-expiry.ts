import { walkDocuments } from "../parts.js";
import type { MigrationStep } from "../step.js";

/**
 * The gateway's rate-limit tokens written before they carried `expires_at` (when a periodic delete removed them) are
 * never removed by the TTL index: they are deleted. A token is used only in its one-second window, so every one of
 * them is past use. 1.4.0 deleted them at each gateway start; it writes `expires_at` on every token.
 */
export const step: MigrationStep = {
  id: "0005-rate-limit-tokens-expiry",
  release: "1.4.1",
  kind: "expand",
  summary: "deletes the gateway's rate-limit tokens without expires_at (past windows the TTL index never removes)",
  parts: [walkDocuments({ collection: "rate_limit_tokens", where: { expires_at: { $exists: false } }, what: "tokens without expires_at", delete: true })],
};
