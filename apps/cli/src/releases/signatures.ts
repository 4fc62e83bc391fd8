// Standard Webhooks signatures checked by hand, with no tolerance on the timestamp (a delivery of a packed
// release's pending event is signed with the shifted clock of the stack under test): `v1` is an HMAC-SHA256 with
// the `whsec_` secret's bytes, `v1a` an Ed25519 signature checked with the `whpk_` public key.
import { createHmac, createPublicKey, verify } from "node:crypto";

/** The signed content: `id.timestamp.body`. */
function signedContent(headers: Record<string, string | string[] | undefined>, body: string): string {
  return `${String(headers["webhook-id"])}.${String(headers["webhook-timestamp"])}.${body}`;
}

function signatures(headers: Record<string, string | string[] | undefined>, scheme: "v1" | "v1a"): string[] {
  return String(headers["webhook-signature"] ?? "")
    .split(" ")
    .filter((s) => s.startsWith(`${scheme},`))
    .map((s) => s.slice(scheme.length + 1));
}

/** Whether one of the delivery's `v1` signatures is the secret's. */
export function signedWithSecret(headers: Record<string, string | string[] | undefined>, body: string, secret: string): boolean {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key).update(signedContent(headers, body)).digest("base64");
  return signatures(headers, "v1").includes(expected);
}

/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the 32 key bytes follow. */
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** Whether one of the delivery's `v1a` signatures verifies with the public key. */
export function signedWithPublicKey(headers: Record<string, string | string[] | undefined>, body: string, publicKey: string): boolean {
  const raw = Buffer.from(publicKey.replace(/^whpk_/, ""), "base64");
  const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: "der", type: "spki" });
  const content = Buffer.from(signedContent(headers, body));
  return signatures(headers, "v1a").some((s) => verify(null, content, key, Buffer.from(s, "base64")));
}
