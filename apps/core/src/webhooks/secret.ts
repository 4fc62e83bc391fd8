import { createCipheriv, createDecipheriv, createHmac, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";

/**
 * Endpoint signing secrets (CONTRACT.md section 7, in ../shared/docs/): made here, stored only
 * encrypted (AES-256-GCM), shown in clear only in create and rotate answers.
 *
 * Stored form: `enc1.<key id>.<base64url of iv (12 bytes) | ciphertext | tag (16 bytes)>`.
 * The key id names which master key sealed it, so `RMS_SECRET_KEY` can be
 * rotated: decryption looks the id up in a keyring, encryption always uses its
 * primary key, and `needsReencryption` finds what an old key sealed.
 */

export const SECRET_PREFIX = "whsec_";
const SECRET_BYTES = 32;
const MASTER_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const FORMAT = "enc1";

export type SecretCryptoCode = "secret_key_invalid" | "secret_malformed" | "secret_key_unknown" | "secret_tampered";

/** A failure to seal or open a secret; `code` says which, the message never holds key or secret material. */
export class SecretCryptoError extends Error {
  override name = "SecretCryptoError";
  constructor(
    readonly code: SecretCryptoCode,
    message: string,
  ) {
    super(message);
  }
}

/** One master key and its id (derived from the key, so configuration holds the key alone). */
export interface MasterKey {
  readonly id: string;
  readonly bytes: Buffer;
}

/** The key new secrets are sealed with, and older keys still accepted for opening. */
export interface Keyring {
  readonly primary: MasterKey;
  readonly previous?: readonly MasterKey[];
}

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

/** What an endpoint's stored key records of its scheme besides the sealed key: a `v1a` key says so and keeps its public key. */
export interface KeyScheme {
  scheme?: "v1a";
  public_key?: string;
}

/** How an endpoint signs now (its newest key), as its public object shows it: the scheme, and the public key of a `v1a` one. */
export function signingSchemeOf(newest: KeyScheme | undefined): { signature_scheme: "v1" | "v1a"; public_key: string | null } {
  return newest?.scheme === "v1a" ? { signature_scheme: "v1a", public_key: newest.public_key ?? null } : { signature_scheme: "v1", public_key: null };
}

/** A master key from its 32 bytes. The id is a keyed hash, so it tells nothing about the key. */
export function masterKey(bytes: Uint8Array): MasterKey {
  if (bytes.length !== MASTER_KEY_BYTES) throw new SecretCryptoError("secret_key_invalid", `A secret key must be ${MASTER_KEY_BYTES} bytes, got ${bytes.length}.`);
  const key = Buffer.from(bytes);
  const id = createHmac("sha256", key).update("rms webhook secret key id").digest("base64url").slice(0, 8);
  return { id, bytes: key };
}

/** A master key from its text form (`RMS_SECRET_KEY`): 64 hex digits or the base64 of 32 bytes. */
export function parseMasterKey(text: string): MasterKey {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return masterKey(Buffer.from(trimmed, "hex"));
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) return masterKey(Buffer.from(trimmed, "base64"));
  throw new SecretCryptoError("secret_key_invalid", "A secret key must be 64 hex digits or the base64 of 32 bytes.");
}

/** A new random master key in its text form (what development writes into the data directory). */
export function newMasterKeyText(): string {
  return randomBytes(MASTER_KEY_BYTES).toString("base64");
}

/**
 * Seals a secret. `context` (for example the endpoint id) is authenticated
 * with it, so a sealed secret copied onto another endpoint does not open.
 */
export function encryptSecret(plaintext: string, keyring: Keyring, context = ""): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", keyring.primary.bytes, iv);
  cipher.setAAD(Buffer.from(`${FORMAT}.${keyring.primary.id}.${context}`));
  const ciphertext = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  const sealed = Buffer.concat([iv, ciphertext, cipher.getAuthTag()]);
  return `${FORMAT}.${keyring.primary.id}.${sealed.toString("base64url")}`;
}

function parseSealed(stored: string): { keyId: string; iv: Buffer; ciphertext: Buffer; tag: Buffer } {
  const parts = stored.split(".");
  if (parts.length !== 3 || parts[0] !== FORMAT || !/^[A-Za-z0-9_-]+$/.test(parts[2]!)) {
    throw new SecretCryptoError("secret_malformed", "The stored secret is not in a known sealed form.");
  }
  const sealed = Buffer.from(parts[2]!, "base64url");
  if (sealed.length < IV_BYTES + TAG_BYTES) throw new SecretCryptoError("secret_malformed", "The stored secret is too short.");
  return {
    keyId: parts[1]!,
    iv: sealed.subarray(0, IV_BYTES),
    ciphertext: sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES),
    tag: sealed.subarray(sealed.length - TAG_BYTES),
  };
}

function keyById(keyring: Keyring, id: string): MasterKey | undefined {
  return [keyring.primary, ...(keyring.previous ?? [])].find((key) => key.id === id);
}

/** Opens a sealed secret; a changed byte, a wrong context or an unknown key is a typed error, never garbage. */
export function decryptSecret(stored: string, keyring: Keyring, context = ""): string {
  const { keyId, iv, ciphertext, tag } = parseSealed(stored);
  const key = keyById(keyring, keyId);
  if (!key) throw new SecretCryptoError("secret_key_unknown", `The stored secret was sealed with key ${keyId}, which is not configured.`);
  const decipher = createDecipheriv("aes-256-gcm", key.bytes, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(`${FORMAT}.${keyId}.${context}`));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString("utf8");
  } catch {
    throw new SecretCryptoError("secret_tampered", "The stored secret failed its integrity check.");
  }
}

/** True when a sealed secret was made with a key other than the primary one (re-seal it after a key rotation). */
export function needsReencryption(stored: string, keyring: Keyring): boolean {
  return parseSealed(stored).keyId !== keyring.primary.id;
}
