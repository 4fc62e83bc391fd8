import { Webhook } from "standardwebhooks";

/**
 * The `webhook-signature` header of the Standard Webhooks specification, made
 * by the `standardwebhooks` library: one `v1,<base64 HMAC-SHA256>` per valid
 * secret, space-separated. The library signs with one secret at a time, so
 * during a rotation's grace period each secret's signature is its own output,
 * newest secret first; receivers accept the message when any one matches.
 */
export function signatureHeader(secrets: readonly string[], messageId: string, timestampSeconds: number, body: string): string {
  if (secrets.length === 0) throw new Error("A delivery needs at least one signing secret.");
  const at = new Date(timestampSeconds * 1000);
  return secrets.map((secret) => new Webhook(secret).sign(messageId, at, body)).join(" ");
}
