import { createHash } from "node:crypto";

/**
 * The one hash of an API key's secret: lower-case hex SHA-256. Core stores keys
 * only by it, and anything else that must remember a key (the gateway's pending
 * revocations) keeps this, never the secret. Secrets are 190 random bits, so a
 * fast hash is enough (no dictionary to guess from).
 */
export function keyHash(secret: string): string {
  return createHash("sha256").update(secret, "utf8").digest("hex");
}

/** The shape of a keyHash value, for checking one received over the wire. */
export const KEY_HASH_PATTERN = /^[0-9a-f]{64}$/;
