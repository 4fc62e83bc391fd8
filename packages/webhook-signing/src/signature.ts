import { sign } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { PRIVATE_KEY_PREFIX, signingKeyOf } from "./keys.js";

/**
 * The `webhook-signature` header of the Standard Webhooks specification: one signature per valid key,
 * space-separated, newest key first; receivers accept the message when any one matches. A `whsec_` secret
 * signs `v1,<base64 HMAC-SHA256>`, made by the `standardwebhooks` library (which signs with one secret at a
 * time); a `whsk_` private key signs `v1a,<base64 Ed25519 signature>` over the same `id.timestamp.body`
 * (the library has no `v1a`). A rotation between schemes signs with both kinds during its grace period.
 */
export function signatureHeader(keys: readonly string[], messageId: string, timestampSeconds: number, body: string): string {
  if (keys.length === 0) throw new Error("A delivery needs at least one signing secret.");
  const at = new Date(timestampSeconds * 1000);
  return keys
    .map((key) => (key.startsWith(PRIVATE_KEY_PREFIX) ? asymmetric(key, messageId, timestampSeconds, body) : new Webhook(key).sign(messageId, at, body)))
    .join(" ");
}

/** `v1a,<base64 of the Ed25519 signature over "id.timestamp.body">`. */
function asymmetric(privateKey: string, messageId: string, timestampSeconds: number, body: string): string {
  const signature = sign(null, Buffer.from(`${messageId}.${timestampSeconds}.${body}`, "utf8"), signingKeyOf(privateKey));
  return `v1a,${signature.toString("base64")}`;
}
