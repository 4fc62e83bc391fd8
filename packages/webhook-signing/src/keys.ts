import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";

/**
 * The text forms of an endpoint's signing keys (CONTRACT.md section 7, in ../shared/docs/): a `whsec_` secret
 * (`v1`, HMAC-SHA256) and a `whsk_`/`whpk_` Ed25519 pair (`v1a`). Core makes and seals them; `rms listen` makes a
 * secret for its session.
 */

export const SECRET_PREFIX = "whsec_";
const SECRET_BYTES = 32;

/** A fresh endpoint secret: `whsec_` + the base64 of 32 random bytes. */
export function newEndpointSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString("base64");
}

/** True for text shaped like a secret this module makes. */
export function isEndpointSecret(text: string): boolean {
  if (!text.startsWith(SECRET_PREFIX)) return false;
  const body = text.slice(SECRET_PREFIX.length);
  return /^[A-Za-z0-9+/]{43}=$/.test(body) && Buffer.from(body, "base64").length === SECRET_BYTES;
}

/** Prefixes of a `v1a` (Ed25519) key pair's text forms (Standard Webhooks): the private key never leaves the service. */
export const PRIVATE_KEY_PREFIX = "whsk_";
export const PUBLIC_KEY_PREFIX = "whpk_";
const ED25519_KEY_BYTES = 32;
/** The DER prefixes of an Ed25519 key in PKCS #8 (private) and SubjectPublicKeyInfo (public) form: the 32 raw bytes follow. */
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_ED25519_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** A `v1a` key pair: the private key `whsk_` + base64 of its 32-byte seed (RFC 8032), the public key `whpk_` + base64 of its 32 bytes. */
export interface EndpointKeyPair {
  readonly privateKey: string;
  readonly publicKey: string;
}

function rawKey(key: KeyObject, prefix: Buffer): Buffer {
  const der = key.export({ format: "der", type: key.type === "private" ? "pkcs8" : "spki" });
  if (der.length !== prefix.length + ED25519_KEY_BYTES || !der.subarray(0, prefix.length).equals(prefix)) throw new Error("not an Ed25519 key");
  return der.subarray(prefix.length);
}

/** A fresh Ed25519 key pair for a `v1a` endpoint. */
export function newEndpointKeyPair(): EndpointKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return {
    privateKey: PRIVATE_KEY_PREFIX + rawKey(privateKey, PKCS8_ED25519_PREFIX).toString("base64"),
    publicKey: PUBLIC_KEY_PREFIX + rawKey(publicKey, SPKI_ED25519_PREFIX).toString("base64"),
  };
}

/** The private key of a `whsk_` text, for signing. */
export function signingKeyOf(text: string): KeyObject {
  const seed = Buffer.from(text.slice(PRIVATE_KEY_PREFIX.length), "base64");
  if (!text.startsWith(PRIVATE_KEY_PREFIX) || seed.length !== ED25519_KEY_BYTES) throw new Error("not a whsk_ key");
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: "der", type: "pkcs8" });
}

/** The public key of a `whpk_` text (what a receiver does with the public key it was given). */
export function verifyingKeyOf(text: string): KeyObject {
  const raw = Buffer.from(text.slice(PUBLIC_KEY_PREFIX.length), "base64");
  if (!text.startsWith(PUBLIC_KEY_PREFIX) || raw.length !== ED25519_KEY_BYTES) throw new Error("not a whpk_ key");
  return createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, raw]), format: "der", type: "spki" });
}

/** The `whpk_` text of a `whsk_` key's public half. */
export function publicKeyOf(privateKey: string): string {
  return PUBLIC_KEY_PREFIX + rawKey(createPublicKey(signingKeyOf(privateKey)), SPKI_ED25519_PREFIX).toString("base64");
}
